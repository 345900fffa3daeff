"""A thread threading learns of only after it has run a while: started with
_thread (no threading.Thread), it spins unnamed for $1 seconds (default 1),
then threading.current_thread() registers it (a _DummyThread) and it takes
the name "late-named", and spins on in spin_late().

Writes $PBP_READY: {"pid", "version", "tid"} as soon as it runs, and
$PBP_READY.named ({"at": time.time()}) once it has its name. Runs until
killed. Python 3.6+."""

import _thread
import sys
import threading
import time

from pbp_target import native_id, ready_path, say_ready, write_json

UNNAMED_S = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def spin_unnamed(until):
    while time.time() < until:
        sum(range(100))


def spin_late():
    while True:
        sum(range(100))


def run():
    say_ready(tid=native_id())
    spin_unnamed(time.time() + UNNAMED_S)
    threading.current_thread().name = "late-named"
    write_json(ready_path(".named"), {"at": time.time()})
    spin_late()


_thread.start_new_thread(run, ())
while True:
    time.sleep(1)
