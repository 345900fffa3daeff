"""Profiling target: names a hostile program could choose, control characters and all.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    hostile_names.py

A thread named THREAD_NAME parks in a function whose name (and qualified
name, 3.11+) is FUNC_NAME, compiled from a file named FILE_NAME: each holds
an ESC sequence (colour, window title, a C1 CSI), a BEL, DEL, a tab and a
newline; the function's name a ';' too. The main thread parks in plain code.
Nothing runs once both are parked.

Writes $PBP_READY: {"pid", "version", "threads": [{"role", "native_id",
"name"}], "function", "file"} once both are parked, or {"error": ...}.
"""

import ctypes
import sys
import threading
import time
import types

from pbp_target import native_id, say_failed, say_ready

THREAD_NAME = "ctrl\x01\x1b[31mred\nline\x9b2J\x7f"
FUNC_NAME = "esc\x1b[31m;semi\nnl\tcsi\x9b1m\x7fend"
FILE_NAME = "/hostile\x1b]0;title\x07dir/f\r\x9b.py"
PARK = threading.Lock()
PARK.acquire()
parked = threading.Event()


def hostile_function():
    src = "def f(report):\n    report()\n    PARK.acquire()\n"
    ns = {"PARK": PARK}
    exec(compile(src, FILE_NAME, "exec"), ns)
    f = ns["f"]
    return types.FunctionType(renamed(f.__code__, FUNC_NAME), ns, FUNC_NAME)


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


def main():
    info = {}

    def report():
        info["native_id"] = native_id()
        parked.set()

    t = threading.Thread(target=hostile_function(), args=(report,), name=THREAD_NAME,
                         daemon=True)
    t.start()
    if not parked.wait(30):
        raise RuntimeError("the thread did not start")
    time.sleep(0.2)     # into PARK.acquire()
    threads = [{"role": "main", "native_id": native_id(),
                "name": threading.current_thread().name},
               {"role": "hostile", "native_id": info["native_id"], "name": THREAD_NAME}]
    say_ready(threads=threads, function=FUNC_NAME, file=FILE_NAME)
    PARK.acquire()


try:
    main()
except Exception as e:
    say_failed(e)
    raise
