"""Tasks made while a wall --async run records (issue 36): N parked tasks
"p0".."pN-1" (argv[1]) from the start, then BURSTS (argv[2]) times, GAP s
apart (argv[3]; the first 2 s after ready), M tasks (argv[4]) made at once,
"b{k}n{i}", parked for ever too. The loop's thread stays in select between.

A second thread marks each burst in its own stack: it waits in "before"
until the loop has made burst k's tasks, then sleeps in "made{k}" until the
next, so the run's samples of that thread in made{j}, j >= k, are the ticks
since burst k, measured by the target itself, against which each task of
burst k (counted from the first read of its loop's tasks after it was
made) is compared.

Writes $PBP_READY ({"pid", "version", "tasks"}) once the N tasks are parked.
Python 3.8+ (task names, code.replace)."""

import asyncio
import sys
import threading
import time

from pbp_target import say_ready

N, BURSTS, GAP, M = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])


def sleeper(name):
    """A function that sleeps, named name in its code object (one per phase)."""
    def phase(seconds):
        time.sleep(seconds)
    names = {"co_name": name}
    if hasattr(phase.__code__, "co_qualname"):
        names["co_qualname"] = name     # 3.11+: what a profiler names
    phase.__code__ = phase.__code__.replace(**names)
    return phase


def before(made):
    made.wait()


def marker(loop, ev):
    # Every phase's code made now: one freed could leave its address to the next's.
    phases = [sleeper("made%d" % k) for k in range(BURSTS)]
    time.sleep(2)
    for k in range(BURSTS):
        made = threading.Event()
        loop.call_soon_threadsafe(burst, k, ev, made)
        before(made)
        phases[k](GAP if k < BURSTS - 1 else 3600)


def burst(k, ev, made):
    for i in range(M):
        asyncio.get_running_loop().create_task(parked(ev), name="b%dn%d" % (k, i))
    made.set()


async def parked(ev):
    await ev.wait()


async def main():
    ev = asyncio.Event()
    for i in range(N):
        asyncio.create_task(parked(ev), name="p%d" % i)
    await asyncio.sleep(0.1)
    threading.Thread(target=marker, args=(asyncio.get_running_loop(), ev), daemon=True).start()
    say_ready(tasks=N)
    await asyncio.sleep(3600)


asyncio.run(main())
