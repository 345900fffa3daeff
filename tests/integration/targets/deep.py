"""Profiling target: threads parked very deep in Python recursion.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    deep.py DEPTH[s] [DEPTH[s]...]

One thread per DEPTH, named "deep-DEPTH", recurses in descend() until it is
DEPTH calls deep and parks in park() on a lock that is never released; with
the "s" suffix it spins in park() instead (a thread on CPU, for cpu mode).
The main thread parks. Up to 3.10 a Python call also takes C stack, so the
threads get a big one.

Writes $PBP_READY: {"pid", "version", "threads": [{"role", "native_id",
"frames": Python frames on the thread's stack, "root": its outermost
function's name}]} once all of them are parked, or {"error": ...}.
"""

import ctypes
import sys
import threading
import time

from pbp_target import native_id, say_failed, say_ready

PARK = threading.Lock()
PARK.acquire()
lock = threading.Lock()
parked = []


def park(role, spin):
    f, n, root = sys._getframe(), 0, None
    while f is not None:
        n, root, f = n + 1, f.f_code.co_name, f.f_back
    with lock:
        parked.append({"role": role, "native_id": native_id(), "frames": n,
                       "root": root})
    while spin:
        pass
    PARK.acquire()


def descend(n, role, spin):
    if n > 1:
        descend(n - 1, role, spin)
    else:
        park(role, spin)


def main():
    depths = [(int(a.rstrip("s")), a.endswith("s")) for a in sys.argv[1:]]
    sys.setrecursionlimit(max(d for d, _ in depths) + 1000)
    threading.stack_size(512 << 20)
    for d, spin in depths:
        role = "deep-%d" % d
        threading.Thread(target=descend, args=(d, role, spin), name=role, daemon=True).start()
    threading.stack_size(0)
    deadline = time.monotonic() + 60
    while len(parked) < len(depths) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)     # into PARK.acquire()
    if len(parked) < len(depths):
        raise RuntimeError("only %s parked" % [p["role"] for p in parked])
    say_ready(threads=parked)
    PARK.acquire()


try:
    main()
except Exception as e:
    say_failed(e)
    raise
