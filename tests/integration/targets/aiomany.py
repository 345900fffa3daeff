"""Many parked asyncio tasks and one spinning (issue 30), for `record
--async -m wall`: N tasks "p0".."pN-1" (argv[1]) each await an Event that
never fires, gathered by the main task with "spinner", which computes in
spin() and yields (asyncio.sleep(NAP), argv[2], default 0) for ever. Every
tick of the loop's thread should count each parked task once, and the
spinner once at most.

Writes $PBP_READY ({"pid", "version", "tasks"}) once spinner runs with
every task parked. Python 3.8+ (task names)."""

import asyncio
import sys

from pbp_target import say_ready

N = int(sys.argv[1])
NAP = float(sys.argv[2]) if len(sys.argv) > 2 else 0


def spin():
    sum(range(20000))


async def spinner():
    await asyncio.sleep(0.1)
    say_ready(tasks=N)
    while True:
        spin()
        await asyncio.sleep(NAP)


async def parked(ev):
    await ev.wait()


async def main():
    ev = asyncio.Event()
    ts = [asyncio.create_task(parked(ev), name="p%d" % i) for i in range(N)]
    await asyncio.gather(asyncio.create_task(spinner(), name="spinner"), *ts)


asyncio.run(main())
