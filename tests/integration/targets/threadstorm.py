"""A process that starts many threads at a steady pace, each then asleep
on a lock 20 frames deep (issue 14 item 7: wall mode with 800-2,000 threads).

    threadstorm.py N SECONDS

Writes $PBP_READY ({"pid", "version"}) once the first thread runs, so a
profiler attaches while the others are still being started over SECONDS;
then the main thread sleeps until killed. Python 3.8+."""

import sys
import threading
import time

from pbp_target import say_ready

N, SECONDS = int(sys.argv[1]), float(sys.argv[2])
gate = threading.Lock()
gate.acquire()


def down(k):
    if k:
        return down(k - 1)
    gate.acquire()


def start(i):
    threading.Thread(target=down, args=(20,), name="storm-%d" % i, daemon=True).start()


start(0)
say_ready()
t0 = time.monotonic()
for i in range(1, N):
    start(i)
    time.sleep(max(0.0, t0 + SECONDS * i / N - time.monotonic()))
while True:
    time.sleep(3600)
