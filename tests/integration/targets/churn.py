"""Adversarial target: threads and code objects born and gone all the time.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    churn.py [SPAWNERS]

SPAWNERS threads (default 3) each start a short-lived thread, which runs a
little Python and exits, and join it, over and over: thousands of threads a
second come and go, each thread state freed as the next is allocated
(likely at the same address). A compiler thread compiles and runs a fresh
function (a new code object, soon freed, its address reused) in a loop,
under 1,000 names and files in turn.
The main thread sleeps.

Every second the counts so far go to $PBP_READY.counts as JSON
{"threads": n, "codes": n, "seconds": s}. Writes $PBP_READY {"pid",
"version"} once everything turns.
"""

import sys
import threading
import time

from pbp_target import ready_path, say_ready, write_json

counts = {"threads": 0, "codes": 0}


def short():
    x = 0
    for i in range(200):
        x += i
    return x


def spawner():
    while True:
        t = threading.Thread(target=short)
        t.start()
        t.join()
        counts["threads"] += 1


def compiler():
    i = 0
    while True:
        i += 1
        ns = {}
        # A new code object every time, from 1,000 names: the profile stays bounded.
        src = "def churned_%d(n):\n    return sum(range(n)) + %d\n" % (i % 1000, i)
        exec(compile(src, "<churn-%d>" % (i % 1000), "exec"), ns)
        ns["churned_%d" % (i % 1000)](50)
        counts["codes"] += 1


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for i in range(n):
        threading.Thread(target=spawner, name="spawner-%d" % i, daemon=True).start()
    threading.Thread(target=compiler, name="compiler", daemon=True).start()
    t0 = time.monotonic()
    while counts["threads"] < 100 or counts["codes"] < 100:
        time.sleep(0.01)
    say_ready()
    while True:
        time.sleep(1)
        write_json(ready_path(".counts"), dict(counts, seconds=time.monotonic() - t0))


main()
