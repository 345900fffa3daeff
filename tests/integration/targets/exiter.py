"""Adversarial target: a process that exits while it is being read.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    exiter.py HOW DELAY

Starts 40 threads, half parked 60 frames deep, half spinning 60 frames deep
(long walks, so a read is likely under way when the end comes), writes
$PBP_READY {"pid", "version"}, waits for the file $PBP_READY.go (the test
makes it once a dump has read the target whole: on a loaded machine that
can take seconds, and a fixed lifetime could end before any read), then
DELAY seconds later ends:
  os_exit     os._exit(0): the kernel tears the process down at once
  finalize    sys.exit(0) from the main thread: the interpreter finalizes
              first (thread states and objects freed while threads still run)
  abort       os.abort(): SIGABRT, a core dump's worth of teardown
"""

import os
import resource
import sys
import threading
import time

from pbp_target import ready_path, say_ready

PARK = threading.Lock()
PARK.acquire()


def down(n, spin):
    if n:
        return down(n - 1, spin)
    if not spin:
        PARK.acquire()
    x = 0
    while True:
        x += 1


def main():
    how, delay = sys.argv[1], float(sys.argv[2])
    for i in range(40):
        threading.Thread(target=down, args=(60, i % 2 == 1), daemon=True).start()
    time.sleep(0.1)
    say_ready()
    while not os.path.exists(ready_path(".go")):
        time.sleep(0.01)
    time.sleep(delay)
    if how == "os_exit":
        os._exit(0)
    elif how == "abort":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left behind
        os.abort()
    sys.exit(0)


main()
