"""A CPython 3.13+ that claims, in its own _Py_DebugOffsets, to be 3.15.

Runs on CPython 3.13 and later (the table is at the start of _PyRuntime).

    bumped.py HOW

Rewrites words of the table (an out-of-process tool's business only: the
interpreter never reads it):
  as_is          the version to 3.15 (its own micro), the rest as it is: the
                 table of a 3.13 or 3.14
  swapped        the same, and the frame block's "previous" and "executable"
                 offsets swapped: a table that still validates but that no
                 frame decodes with
  free_threaded  only the free_threaded flag, set: a 3.13t or 3.14t
Parks a thread in parked() and writes $PBP_READY {"pid", "version",
"parked": {"native_id", "file", "line"}}.
"""

import ctypes
import os
import sys
import threading
import time

from pbp_target import say_ready

PARK = threading.Lock()
PARK.acquire()
FRAME_BLOCK = {13: 224, 14: 248}       # byte offset of interpreter_frame in the table


def parked(box):
    box["native_id"] = threading.get_native_id()
    PARK.acquire()  # parked here


def bump(how):
    rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    if ctypes.string_at(rt, 8) != b"xdebugpy":
        sys.exit("no _Py_DebugOffsets at _PyRuntime")
    if how == "free_threaded":
        ctypes.c_uint64.from_address(rt + 16).value = 1
        return
    ver = ctypes.c_uint64.from_address(rt + 8)
    ver.value = (ver.value & ~0xff0000) | (15 << 16)
    if how == "swapped":
        block = rt + FRAME_BLOCK[sys.version_info[1]]
        prev = ctypes.c_uint64.from_address(block + 8)
        code = ctypes.c_uint64.from_address(block + 16)
        prev.value, code.value = code.value, prev.value


def main():
    bump(sys.argv[1])
    box = {}
    threading.Thread(target=parked, args=(box,), daemon=True).start()
    while "native_id" not in box:
        time.sleep(0.01)
    time.sleep(0.2)
    line = [i for i, l in enumerate(open(__file__), 1) if l.rstrip().endswith("# parked here")][0]
    say_ready(parked={"native_id": box["native_id"], "file": os.path.abspath(__file__), "line": line})
    PARK.acquire()


main()
