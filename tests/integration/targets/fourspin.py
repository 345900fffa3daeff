"""Four threads spinning at once, each in its own function, resting apart so
that their CPU shares differ (the test reads the truth from each thread).

    fourspin.py

Pinned to 2 CPUs (the first two it may use): four threads contend for 2 CPUs (with a GIL, for one).
Thread i runs spin_<i>(), which sleeps 2*i ms every 1000 turns of its loop,
and keeps its own time.thread_time in a shared dict; $PBP_READY.times gets
{"at": time.time() of the copy, "spent": {name: seconds}} before the
target says ready and then every 0.1 s (the main thread writes it when it
gets the GIL, which can be seconds late). $PBP_READY: {"pid", "version", "script",
"threads": [{"name", "native_id", "function", "lines": [first, last]}]} where
lines is the span of the function's loop. The main thread sleeps until killed.
Works on Python 3.6+ (3.6, 3.7: no get_native_id; CLOCK_THREAD_CPUTIME_ID).
"""

import os
import threading
import time

from pbp_target import native_id, ready_path, say_ready, write_json

spent = {}
started = []
lock = threading.Lock()


# Called straight from the loops, never through a Python function: the top
# frame of a spinning thread is always its spin_<i>.
clock = time.clock_gettime
CPU = time.CLOCK_THREAD_CPUTIME_ID


def spin_0(name):
    x = 0
    while True:  # mark: spin_0-first
        x = (x + 1) % 1000
        if not x:
            time.sleep(0 * 0.002)
        spent[name] = clock(CPU)  # mark: spin_0-last


def spin_1(name):
    y = 0
    while True:  # mark: spin_1-first
        y = (y + 1) % 1000
        if not y:
            time.sleep(1 * 0.002)
        spent[name] = clock(CPU)  # mark: spin_1-last


def spin_2(name):
    z = 0
    while True:  # mark: spin_2-first
        z = (z + 1) % 1000
        if not z:
            time.sleep(2 * 0.002)
        spent[name] = clock(CPU)  # mark: spin_2-last


def spin_3(name):
    w = 0
    while True:  # mark: spin_3-first
        w = (w + 1) % 1000
        if not w:
            time.sleep(3 * 0.002)
        spent[name] = clock(CPU)  # mark: spin_3-last


SPINS = [spin_0, spin_1, spin_2, spin_3]


def marks():
    with open(__file__) as f:
        return {t.split("# mark: ")[1].strip(): n for n, t in enumerate(f, 1) if "# mark: " in t}


def run(i):
    name = "spin-%d" % i
    with lock:
        started.append({"name": name, "native_id": native_id(), "function": SPINS[i].__name__})
    SPINS[i](name)


def main():
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])  # the first two allowed
    m = marks()
    for i in range(4):
        threading.Thread(target=run, args=(i,), name="spin-%d" % i, daemon=True).start()
    while len(started) < 4:
        time.sleep(0.01)
    time.sleep(0.3)
    for t in started:
        t["lines"] = [m[t["function"] + "-first"], m[t["function"] + "-last"]]
    # The first copy before the word ready: the tests find the file at once,
    # however long the main thread then waits for the GIL to copy again.
    write_json(ready_path(".times"), {"at": time.time(), "spent": dict(spent)})
    say_ready(script=os.path.abspath(__file__), threads=started)
    while True:
        time.sleep(0.1)
        write_json(ready_path(".times"), {"at": time.time(), "spent": dict(spent)})


main()
