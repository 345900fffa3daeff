"""One asyncio task awaiting another that burns CPU between short sleeps
(issue 30), for `record --async` in cpu mode: task "fetch-users" awaits task
"db-query", which computes about 2 ms in burn() and then sleeps 2 ms, for
ever. Both exist before any profiler attaches, so every sample in burn()
belongs to db-query, awaited by fetch-users. By the time such a sample is
named the task is often asleep: a profiler that asks which task runs then
finds none.

Writes $PBP_READY ({"pid", "version"}) once db-query has burned. Python 3.11+
(task names, asyncio.timeout-free)."""

import asyncio
import time

from pbp_target import say_ready


def burn():
    end = time.thread_time() + 0.002
    while time.thread_time() < end:
        pass


async def db_query():
    rounds = 0
    while True:
        burn()
        await asyncio.sleep(0.002)
        rounds += 1
        if rounds == 20:
            say_ready()


async def fetch_users():
    await asyncio.create_task(db_query(), name="db-query")


async def main():
    await asyncio.create_task(fetch_users(), name="fetch-users")


asyncio.run(main())
