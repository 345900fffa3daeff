"""asyncio under churn (issue 22): one loop creates and cancels tasks as
fast as it can, batches of 200 made, let start, cancelled and reaped, while
a chain of 100 nested coroutines (deeper than any bound of the reader)
stays parked in one task. `dump --async` read against it must never crash
or hang, whatever it catches half made or half freed.

Writes $PBP_READY ({"pid", "version", "rate"}: tasks created per second in
its first second), then churns until killed. Python 3.7+."""

import asyncio
import time

from pbp_target import say_ready


async def victim():
    await asyncio.sleep(10)


async def deep(n, ev):
    if n:
        return await deep(n - 1, ev)
    await ev.wait()


def ready(rate):
    say_ready(rate=rate)


async def main():
    ev = asyncio.Event()
    asyncio.create_task(deep(100, ev), name="deep")
    made, t0, told = 0, time.monotonic(), False
    while True:
        batch = [asyncio.create_task(victim()) for _ in range(200)]
        await asyncio.sleep(0)
        for t in batch:
            t.cancel()
        await asyncio.gather(*batch, return_exceptions=True)
        made += len(batch)
        if not told and time.monotonic() - t0 >= 1:
            ready(made / (time.monotonic() - t0))
            told = True


asyncio.run(main())
