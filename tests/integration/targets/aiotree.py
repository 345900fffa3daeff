"""A known asyncio task tree (issue 22), for `pybpfprof dump --async`:

    main     gathers sleeper, waiter and spinner
    sleeper  awaits asyncio.sleep(3600)
    waiter   awaits helper(), a coroutine that awaits the task leaf
    leaf     (named by asyncio: Task-N) awaits an Event that never fires
    cowaiter awaits leaf too (leaf's awaiters are then a set)
    spinner  runs: spins in CPU, never yields again

Once every other task is parked, spinner writes $PBP_READY with what
asyncio says of each task: its name (Task.get_name), its coroutine chain
from the task's coroutine down the cr_await links while they are
coroutines (function, file, line; Task.get_stack()'s one frame is its
first), the names of the tasks awaiting it (3.14's
_asyncio_awaited_by) and the task it waits on (_fut_waiter, when a task), and the tasks awaiting
it found by walking asyncio's own objects ("awaited_by_walk": each task
whose _fut_waiter is it, or is a _GatheringFuture whose _children hold
it), what pybpfprof reads before 3.14. Then spinner spins until killed.
Any Python 3.7+ runs it; _asyncio_awaited_by exists on 3.14+ only (there
the two must agree)."""

import asyncio
import types

from pbp_target import say_ready


def chain(coro):
    out = []
    while isinstance(coro, types.CoroutineType) and coro.cr_frame is not None:
        code = coro.cr_code
        out.append({"function": getattr(code, "co_qualname", code.co_name),
                    "file": code.co_filename, "line": coro.cr_frame.f_lineno})
        coro = coro.cr_await
    return out


def describe(task):
    coro = task.get_coro()
    stack = task.get_stack()
    d = {"name": task.get_name(), "id": hex(id(task)), "frames": chain(coro),
         "running": task is asyncio.current_task(),
         "get_stack": [f.f_code.co_name for f in stack]}
    by = getattr(task, "_asyncio_awaited_by", None)
    d["awaited_by"] = sorted(t.get_name() for t in by) if by else []
    waiter = getattr(task, "_fut_waiter", None)     # the future its step waits on
    d["waits_for"] = waiter.get_name() if isinstance(waiter, asyncio.Task) else None
    return d


def awaited_by_walk(task, tasks):
    """Who awaits task, from the objects asyncio keeps: _fut_waiter, and a
    gather's future's _children."""
    out = []
    for t in tasks:
        w = getattr(t, "_fut_waiter", None)
        if w is task or (type(w).__name__ == "_GatheringFuture" and
                         any(c is task for c in getattr(w, "_children", ()))):
            out.append(t.get_name())
    return sorted(out)


def report():
    every = list(asyncio.all_tasks())
    tasks = [describe(t) for t in every]
    for d, t in zip(tasks, every):
        d["awaited_by_walk"] = awaited_by_walk(t, every)
    say_ready(tasks=tasks)


async def sleeper():
    await asyncio.sleep(3600)


async def leaf(ev):
    await ev.wait()


async def helper(t):
    await t


async def cowaiter(t):
    await t


async def waiter(ev):
    t = asyncio.ensure_future(leaf(ev))
    asyncio.create_task(cowaiter(t), name="cowaiter")
    await helper(t)


async def spinner():
    await asyncio.sleep(0.3)    # every other task parks meanwhile
    report()
    n = 0
    while True:
        n += 1


async def main():
    asyncio.current_task().set_name("main")
    ev = asyncio.Event()
    await asyncio.gather(asyncio.create_task(sleeper(), name="sleeper"),
                         asyncio.create_task(waiter(ev), name="waiter"),
                         asyncio.create_task(spinner(), name="spinner"))


asyncio.run(main())
