"""Adversarial target: threads that turn their own frame chain into a cycle.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    cycle.py

Three threads besides the main one:
  loop-parked   entry -> level1 -> level2 -> level3 -> corrupt_park; in
                corrupt_park it makes level3's link to its caller point at
                level3 itself, then blocks for good in PARK.acquire().
  loop-spinning the same chain, but makes level1's link point at level3 (a
                cycle of three frames), then spins in corrupt_spin, calling
                work() over and over: work returns into corrupt_spin, whose
                own link is untouched, so the thread runs on.
  healthy       spins in healthy_spin, untouched: its stack must stay right.

The link is the frame object's f_back up to 3.10 (PyFrameObject) and the
interpreter frame's `previous` from 3.11 (_PyInterpreterFrame, reached
through the frame object's f_frame). Neither offset is assumed: both are
found from id() and sys._getframe() by looking, in the inner frame's memory,
for the address of the outer one. Only a thread's own frames that will never
run again (callers of a function that never returns) are written, and the
garbage collector is off (3.14's walks thread stacks through `previous`).

Writes $PBP_READY: {"pid", "version", "link": "f_back" | "previous",
"threads": [{"role", "native_id", "frames": [innermost first, the names
before the corruption]}]}, or {"error": ...}.
"""

import ctypes
import gc
import sys
import threading
import time

from pbp_target import native_id, say_failed, say_ready


WORD = ctypes.sizeof(ctypes.c_void_p)
OLD = sys.version_info < (3, 11)
PARK = threading.Lock()
PARK.acquire()

lock = threading.Lock()
reports = []
errors = []


def word(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def set_word(addr, value):
    ctypes.c_void_p.from_address(addr).value = value


def find_word(base, value, span=256):
    """Offset of the first word at base..base+span that holds value, or None."""
    for off in range(0, span, WORD):
        if word(base + off) == value:
            return off
    return None


def links():
    """(frame -> address of its node, node -> offset of the link to its caller).
    Called from a function with at least two callers above it."""
    inner = sys._getframe(1)
    outer = inner.f_back
    if OLD:
        off = find_word(id(inner), id(outer))
        if off is None:
            raise RuntimeError("no f_back in the frame object")
        return id, off
    # 3.11+: PyFrameObject {PyObject_HEAD; f_back; f_frame; ...}: find f_frame
    # as the word of both frame objects whose targets link one to the other.
    for fo in range(2 * WORD, 8 * WORD, WORD):
        a, b = word(id(inner) + fo), word(id(outer) + fo)
        if a and b and a != b:
            off = find_word(a, b, 128)
            if off is not None:
                return (lambda f, fo=fo: word(id(f) + fo)), off
    raise RuntimeError("no _PyInterpreterFrame.previous found")


def names(frame):
    out = []
    while frame is not None:
        out.append(frame.f_code.co_name)
        frame = frame.f_back
    return out


def report(role):
    with lock:
        reports.append({"role": role, "native_id": native_id(),
                        "frames": names(sys._getframe(1))})


def point(frame, target, node, off):
    """Make frame's link to its caller point at target's node."""
    if OLD:
        # f_back owns a reference: give target the one it now has.
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(target))
    set_word(node(frame) + off, node(target))


def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def corrupt_park():
    node, off = links()
    me = sys._getframe()
    level3 = me.f_back
    report("loop-parked")
    point(level3, level3, node, off)   # level3 -> level3 -> ...
    PARK.acquire()


def corrupt_spin():
    node, off = links()
    me = sys._getframe()
    level3 = me.f_back
    level1 = level3.f_back.f_back
    report("loop-spinning")
    point(level1, level3, node, off)   # level3 -> level2 -> level1 -> level3 -> ...
    while True:
        work(2000)


def level3(fn):
    fn()


def level2(fn):
    level3(fn)


def level1(fn):
    level2(fn)


def entry(fn):
    try:
        level1(fn)
    except BaseException as e:  # before the corruption only: after it nothing returns
        with lock:
            errors.append("%s: %s" % (type(e).__name__, e))


def healthy_spin():
    report("healthy")
    while True:
        work(2000)


def main():
    gc.disable()
    threads = [threading.Thread(target=entry, args=(corrupt_park,), name="loop-parked", daemon=True),
               threading.Thread(target=entry, args=(corrupt_spin,), name="loop-spinning",
                                daemon=True),
               threading.Thread(target=healthy_spin, name="healthy", daemon=True)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with lock:
            if errors or len(reports) == len(threads):
                break
        time.sleep(0.01)
    time.sleep(0.3)  # the writes are done right after each report
    if errors or len(reports) != len(threads):
        say_failed("; ".join(errors) or "threads did not report")
    else:
        say_ready(link="f_back" if OLD else "previous", threads=reports)
    while True:
        time.sleep(3600)


main()
