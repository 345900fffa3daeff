"""Adversarial target: code objects no sane program has.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    absurd.py

Threads, each in a function that is absurd in one way:
  long-body      spins on the last lines of a 50,000-line function (a line
                 table of hundreds of KiB, read whole to name one line)
  long-names     spins in a function whose name, qualified name and file name
                 are 1 MB each
  odd-chars      spins in a function named "semi;colon\\nnew line\\x00nul",
                 from a file named "a;b\\nc (1):2.py" with a lone surrogate
  firstline-max  spins in a function whose co_firstlineno, set with ctypes,
  firstline-min  is INT_MAX, INT_MIN, -1 and INT_MAX - 2 (line arithmetic
  firstline-neg  that overflows, negative lines)
  firstline-edge
  too-deep       parked 20,000 frames deep: more than any walker follows

co_firstlineno's offset in the code object is found by compiling a function
at a known first line and looking for that number in the object's memory.

Writes $PBP_READY: {"pid", "version", "threads": [{"role", "native_id",
"function"}]} once all of them run, or {"error": ...}.
"""

import ctypes
import sys
import threading
import time
import types

from pbp_target import native_id, say_failed, say_ready


PARK = threading.Lock()
PARK.acquire()
INT_MAX, INT_MIN = 2 ** 31 - 1, -2 ** 31
DEPTH = 20000
MB = 1 << 20

lock = threading.Lock()
started = []


def started_as(role, function):
    with lock:
        started.append({"role": role, "native_id": native_id(),
                        "function": function})


def compiled(src, filename, name):
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def long_body():
    body = "".join("    x%d = %d\n" % (i % 7, i) for i in range(50000))
    src = "def long_body(report):\n" + body + \
        "    report()\n    n = 0\n    while True:\n        n += 1\n"
    return compiled(src, "<absurd-long-body>", "long_body")


def long_names():
    name = "n" * MB
    cls = "C" * MB
    src = ("class %s:\n    def %s(self, report):\n        report()\n"
           "        n = 0\n        while True:\n            n += 1\n") % (cls, name)
    ns = {}
    exec(compile(src, "/" + "f" * MB + ".py", "exec"), ns)
    obj = ns[cls]()
    return getattr(obj, name)


def odd_chars():
    src = "def f(report):\n    report()\n    n = 0\n    while True:\n        n += 1\n"
    f = compiled(src, "a;b\nc (1):2\udcff.py", "f")
    name = "semi;colon\nnew line\x00nul"
    return types.FunctionType(renamed(f.__code__, name), f.__globals__, name)


def renamed(code, name):
    """The code object with another name (and qualified name, 3.11+)."""
    if not hasattr(code, "replace"):
        # 3.6, 3.7: no code.replace(); CodeType's arguments in their order.
        return types.CodeType(code.co_argcount, code.co_kwonlyargcount, code.co_nlocals,
                              code.co_stacksize, code.co_flags, code.co_code,
                              code.co_consts, code.co_names, code.co_varnames,
                              code.co_filename, name, code.co_firstlineno, code.co_lnotab,
                              code.co_freevars, code.co_cellvars)
    kw = {"co_name": name}
    if sys.version_info >= (3, 11):
        kw["co_qualname"] = name
    return code.replace(**kw)


MARK_LINE = 0x5A5A5   # 370085: a first line to look for in memory


def firstlineno_offset():
    f = compiled("\n" * (MARK_LINE - 1) + "def f():\n    pass\n", "<mark>", "f")
    code = f.__code__
    assert code.co_firstlineno == MARK_LINE
    for off in range(0, 256, 4):
        if ctypes.c_int.from_address(id(code) + off).value == MARK_LINE:
            return off
    raise RuntimeError("co_firstlineno not found in the code object")


def with_firstline(value, offset):
    src = "def spin(report):\n    report()\n    n = 0\n    while True:\n        n += 1\n"
    f = compiled(src, "<absurd-firstline>", "spin")
    ctypes.c_int.from_address(id(f.__code__) + offset).value = value
    return f


def deep(n, report):
    if n:
        return deep(n - 1, report)
    report()
    PARK.acquire()


def run(role, fn, *args):
    name = fn.__code__.co_name
    shown = name if len(name) < 64 else "%s...(%d chars)" % (name[:16], len(name))
    fn(*(args + (lambda: started_as(role, shown),)))


def main():
    offset = firstlineno_offset()
    jobs = [("long-body", long_body()), ("long-names", long_names()), ("odd-chars", odd_chars())]
    for role, value in (("firstline-max", INT_MAX), ("firstline-min", INT_MIN),
                        ("firstline-neg", -1), ("firstline-edge", INT_MAX - 2)):
        jobs.append((role, with_firstline(value, offset)))
    threads = [threading.Thread(target=run, args=(role, fn), name=role, daemon=True)
               for role, fn in jobs]
    for t in threads:
        t.start()
    # Deep Python recursion: a big limit, and up to 3.10 a big C stack too
    # (the size applies to the threads started while it is set).
    sys.setrecursionlimit(DEPTH + 1000)
    threading.stack_size(512 * MB)
    threads.append(threading.Thread(target=run, args=("too-deep", deep, DEPTH), name="too-deep",
                                    daemon=True))
    threads[-1].start()
    threading.stack_size(0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if len(started) == len(threads):
                break
        time.sleep(0.01)
    time.sleep(0.2)
    if len(started) == len(threads):
        say_ready(threads=started)
    else:
        say_failed("only %s started" % [s["role"] for s in started])
    while True:
        time.sleep(3600)


try:
    main()
except Exception as e:
    say_failed(e)
    raise
