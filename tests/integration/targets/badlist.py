"""Adversarial target: a thread-state list that ends in nowhere, or loops.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    badlist.py fault|cycle

Two threads are started and parked; new thread states go to the head of
the interpreter's list, so the main thread's is the last. The main thread
then rewrites its own state's `next` (found by looking for the others'
addresses in their states, from PyThreadState_Get()):
  fault   to an unmapped address: a walk faults after the real threads, as
          it does when a thread state is freed under it
  cycle   to the head: the list never ends
and parks for good. Nothing in the process walks the list after that: no
thread starts or exits and the garbage collector is off.

Writes $PBP_READY {"pid", "version", "next_offset", "tids": [native ids of
the three threads]}, or {"error": ...}.
"""

import ctypes
import gc
import sys
import threading
import time

from pbp_target import native_id, say_failed, say_ready


WORD = ctypes.sizeof(ctypes.c_void_p)
PARK = threading.Lock()
PARK.acquire()
get_tstate = ctypes.pythonapi.PyThreadState_Get
get_tstate.restype = ctypes.c_void_p
lock = threading.Lock()
seen = []


def word(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def parked():
    with lock:
        seen.append((get_tstate(), native_id()))
    PARK.acquire()


def main():
    how = sys.argv[1]
    gc.disable()
    for i in range(2):
        threading.Thread(target=parked, name="parked-%d" % i, daemon=True).start()
        while len(seen) < i + 1:
            time.sleep(0.01)
    time.sleep(0.1)
    (t1, tid1), (t2, tid2) = seen
    me = get_tstate()
    # t2 is the head: t2 -> t1 -> me -> NULL
    offs = [o for o in range(0, 8 * WORD, WORD)
            if word(t2 + o) == t1 and word(t1 + o) == me and word(me + o) == 0]
    if len(offs) != 1:
        say_failed("next not found (candidates %s)" % offs)
        return
    off = offs[0]
    ctypes.c_void_p.from_address(me + off).value = 0x10 if how == "fault" else t2
    say_ready(next_offset=off, tids=[native_id(), tid1, tid2])
    PARK.acquire()


main()
