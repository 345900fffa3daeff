"""Many threads that wake now and then (issue 14 item 7): each sleeps a
random 0.2 to 1 s, 20 frames deep, in a loop.

    sleepers.py N

Writes $PBP_READY ({"pid", "version"}) once all N threads run; the main
thread then sleeps until killed. Python 3.8+."""

import random
import sys
import threading
import time

from pbp_target import say_ready

N = int(sys.argv[1])
started = threading.Semaphore(0)


def nap():
    while True:
        time.sleep(random.uniform(0.2, 1.0))


def down(k):
    if k:
        return down(k - 1)
    started.release()
    nap()


for i in range(N):
    threading.Thread(target=down, args=(20,), name="sleeper-%d" % i, daemon=True).start()
for i in range(N):
    started.acquire()
say_ready()
while True:
    time.sleep(3600)
