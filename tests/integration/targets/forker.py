"""Adversarial target: a process that forks, execs, and finally execs itself.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    forker.py EXEC_AFTER

A spinner thread runs work() all along. A forker thread forks over and over:
each child (a copy of this process, Python frames and all) runs a little
Python, then either exits or execs /bin/true (or a new interpreter, every
tenth time); the parent reaps it. EXEC_AFTER seconds after the test's word
(the file $PBP_READY.go: a loaded machine may take long to start profiling
it; 0: never) the process execs itself, in place, the same pid, into a new
interpreter running this script with "--again": a new address space whose
_PyRuntime, threads and code objects are all elsewhere. The new image runs
the spinner and forker again and never execs.

Writes $PBP_READY {"pid", "version", "exec_after"} when first ready, and
$PBP_READY.again {"pid"} once running again after the exec.
"""

import os
import sys
import threading
import time
import warnings

from pbp_target import ready_path, say_ready, write_json

AGAIN = "--again" in sys.argv
warnings.simplefilter("ignore")  # 3.12+: DeprecationWarning, fork() with threads


def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def spinner():
    while True:
        work(5000)


def child(i):
    work(2000)
    if i % 10 == 0:
        os.execv(sys.executable, [sys.executable, "-c", "pass"])
    if i % 2 == 0 and os.path.exists("/bin/true"):
        os.execv("/bin/true", ["true"])
    os._exit(0)


def forker():
    i = 0
    while True:
        i += 1
        pid = os.fork()
        if pid == 0:
            try:
                child(i)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.002)


def main():
    args = [a for a in sys.argv[1:] if a != "--again"]
    exec_after = float(args[0]) if args else 0.0
    threading.Thread(target=spinner, name="spinner", daemon=True).start()
    threading.Thread(target=forker, name="forker", daemon=True).start()
    time.sleep(0.2)
    if AGAIN:
        write_json(ready_path(".again"), {"pid": os.getpid()})
        while True:
            time.sleep(3600)
    say_ready(exec_after=exec_after)
    if exec_after <= 0:
        while True:
            time.sleep(3600)
    while not os.path.exists(ready_path(".go")):
        time.sleep(0.05)
    time.sleep(exec_after)
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "--again"])


main()
