"""Profiling target: threads with known Python names, parked for good.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

Usage: named_threads.py [basic|tricky|many|churn] [READY_PATH]

  basic   the main thread and "alpha", "beta-2", "ünïcode-名前"
  tricky  besides those, threads whose names live in the harder places:
          a Thread subclass with attributes of its own, a thread whose
          instance __dict__ was made real (3.11+ keep attributes outside a
          dict until then), a thread renamed after it started, names longer
          than pybpfprof keeps (64 bytes), one with a lone surrogate in
          its name (not valid UTF-8: shown as "?"), a dummy thread (a _thread thread
          that asked threading for its current thread) and a bare _thread
          thread threading never heard of
  many    the basic ones and 300 more, so that threading._active is a large
          dict (2-byte indices)
  churn   the basic ones, and a "spawner" thread that keeps starting
          short-lived threads named "churn-N" (listed in the ready file
          only as the spawner): _active and _limbo change under the reader

Every thread blocks on an Event that is never set, once it is running (in
threading._active). Then the ready file, $PBP_READY or READY_PATH, gets:
  {"pid": int, "version": [major, minor, micro],
   "threads": [{"role", "ident", "native_id", "name": the Python name, or
                null for the thread threading does not know}]}
written atomically. On failure: {"error": "..."} and exit status 1.
"""

import _thread
import ctypes
import json
import os
import sys
import threading
import time

PARK = threading.Event()        # never set
LONG_ASCII = "long-" + "x" * 95
LONG_CJK = "名" * 30            # 90 bytes of UTF-8


def native_id():
    if hasattr(_thread, "get_native_id"):
        return _thread.get_native_id()
    return ctypes.CDLL(None).syscall(186)  # SYS_gettid on x86-64 (3.6, 3.7)


class Running(object):
    """Each thread reports (role, ident, native id) here once it runs."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = {}

    def arrive(self, role):
        with self.lock:
            self.seen[role] = (threading.get_ident(), native_id())

    def wait(self, roles, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if all(r in self.seen for r in roles):
                    return
            time.sleep(0.01)
        raise RuntimeError("threads did not start: %s" % sorted(
            set(roles) - set(self.seen)))


RUNNING = Running()


def parked(role):
    RUNNING.arrive(role)
    PARK.wait()


class Worker(threading.Thread):
    """A subclass whose instances have attributes before and after Thread's."""

    def __init__(self, name):
        self.payload = list(range(3))
        self.early = "set before Thread.__init__"
        threading.Thread.__init__(self, name=name, target=parked, args=("subclass",))
        self.late = {"k": 1}
        self.daemon = True


def churn(role):
    RUNNING.arrive(role)
    n = 0
    while True:
        batch = []
        for _ in range(8):
            # 30 ms: long enough that a dump slowed down by ASan on a busy
            # machine still finds some alive, short enough to churn.
            t = threading.Thread(name="churn-%d" % n, target=time.sleep, args=(0.03,))
            t.daemon = True
            t.start()
            batch.append(t)
            n += 1
        for t in batch:
            t.join()


def start(role, name, **kwargs):
    t = threading.Thread(name=name, target=parked, args=(role,), **kwargs)
    t.daemon = True
    t.start()
    return t


def raw_thread(role, register):
    """A _thread thread; with register, it asks threading who it is (a dummy)."""
    def run():
        if register:
            threading.current_thread()
        RUNNING.arrive(role)
        lock = _thread.allocate_lock()
        lock.acquire()
        lock.acquire()  # never released
    _thread.start_new_thread(run, ())


def build(kind):
    """[(role, Thread or None)]: threads started, by role."""
    threads = [("main", threading.main_thread())]
    RUNNING.seen["main"] = (threading.get_ident(), native_id())
    for role, name in (("alpha", "alpha"), ("beta", "beta-2"), ("unicode", "ünïcode-名前")):
        threads.append((role, start(role, name)))
    if kind == "tricky":
        w = Worker("worker-sub")
        w.start()
        threads.append(("subclass", w))
        t = threading.Thread(name="dict-made-real", target=parked, args=("realdict",))
        t.daemon = True
        vars(t)["extra"] = 1    # the instance __dict__ now exists
        t.start()
        threads.append(("realdict", t))
        t = start("renamed", "before-rename")
        threads.append(("renamed", t))
        threads.append(("long-ascii", start("long-ascii", LONG_ASCII)))
        threads.append(("long-cjk", start("long-cjk", LONG_CJK)))
        threads.append(("surrogate", start("surrogate", "bad-\udcff")))
        raw_thread("dummy", True)
        threads.append(("dummy", None))
        raw_thread("bare", False)
        threads.append(("bare", None))
    elif kind == "churn":
        t = threading.Thread(name="spawner", target=churn, args=("spawner",))
        t.daemon = True
        t.start()
        threads.append(("spawner", t))
    elif kind == "many":
        for i in range(300):
            role = "bulk-%d" % i
            threads.append((role, start(role, "bulk-%03d" % i)))
    RUNNING.wait([role for role, _ in threads])
    if kind == "tricky":
        dict(threads)["renamed"].name = "renamed-later"
    return threads


def describe(threads):
    out = []
    by_ident = dict((t.ident, t) for t in threading.enumerate())
    for role, t in threads:
        ident, nid = RUNNING.seen[role]
        if t is None:
            t = by_ident.get(ident)     # the dummy thread; None for the bare one
        out.append({"role": role, "ident": ident, "native_id": nid,
                    "name": t.name if t is not None else None})
    return out


def write_json(path, obj):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.rename(tmp, path)


def main():
    args = sys.argv[1:]
    kind = args.pop(0) if args and args[0] in ("basic", "tricky", "many", "churn") else "basic"
    ready = args[0] if args else os.environ["PBP_READY"]
    try:
        result = {"pid": os.getpid(), "version": list(sys.version_info[:3]),
                  "threads": describe(build(kind))}
    except Exception as e:  # report it rather than hang the test
        result = {"error": "%s: %s" % (type(e).__name__, e)}
    write_json(ready, result)
    if "error" in result:
        sys.exit(1)
    PARK.wait()


if __name__ == "__main__":
    main()
