"""Threads running one function, each in its own loop of it: on a
free-threaded 3.14t each thread runs its own copy of the function's bytecode
(thread-local bytecode), so a thread's line is found only through its copy.

    samecode.py N

N threads run spin(i): thread i loops at its own line of spin (the loop of
branch i % 3). $PBP_READY: {"pid", "script", "threads": [{"name",
"native_id", "lines": [first, last]}]}. The main thread sleeps until killed.
"""

import os
import sys
import threading
import time

from pbp_target import native_id, say_ready

started = []
lock = threading.Lock()


def spin(i):
    with lock:
        started.append({"name": "same-%d" % i, "native_id": native_id(), "branch": i % 3})
    x = 0
    if i % 3 == 0:
        while True:  # mark: b0-first
            x = (x + 1) % 7  # mark: b0-last
    elif i % 3 == 1:
        while True:  # mark: b1-first
            x = (x + 3) % 11  # mark: b1-last
    else:
        while True:  # mark: b2-first
            x = (x + 5) % 13  # mark: b2-last


def marks():
    with open(__file__) as f:
        return {t.split("# mark: ")[1].strip(): n for n, t in enumerate(f, 1) if "# mark: " in t}


def main():
    n = int(sys.argv[1])
    m = marks()
    for i in range(n):
        threading.Thread(target=spin, args=(i,), name="same-%d" % i, daemon=True).start()
    while len(started) < n:
        time.sleep(0.01)
    time.sleep(0.3)
    for t in started:
        t["lines"] = [m["b%d-first" % t["branch"]], m["b%d-last" % t["branch"]]]
    say_ready(script=os.path.abspath(__file__), threads=started)
    while True:
        time.sleep(1)


main()
