"""Two asyncio tasks taking turns on the CPU (issue 22), for `record
--async`: alpha and beta (gathered by main) each compute about 2 ms in a
function of its own, then yield to the other (asyncio.sleep(0)), forever.
A sample named with the wrong task would show alpha's function under
"task beta" or the reverse.

Writes $PBP_READY ({"pid", "version"}) once both have run. Python 3.7+."""

import asyncio
import time

from pbp_target import say_ready


def alpha_work():
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass


def beta_work():
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass


async def alpha():
    while True:
        alpha_work()
        await asyncio.sleep(0)


async def beta():
    while True:
        beta_work()
        await asyncio.sleep(0)


async def ready():
    await asyncio.sleep(0.1)
    say_ready()


def named(coro, name):
    """A task of coro called name: 3.7's tasks have no names (set_name is 3.8's)."""
    task = asyncio.ensure_future(coro)
    if hasattr(task, "set_name"):
        task.set_name(name)
    return task


async def main():
    if hasattr(asyncio.current_task(), "set_name"):
        asyncio.current_task().set_name("main")
    await asyncio.gather(named(alpha(), "alpha"), named(beta(), "beta"), ready())


asyncio.run(main())
