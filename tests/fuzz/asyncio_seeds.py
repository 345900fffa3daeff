#!/usr/bin/env python3
"""Write the seeds of tests/fuzz/fuzz_asyncio.c into tests/fuzz/corpus/asyncio/.

Each is a memory image at MEM_BASE laid out as 3.14.10's release build lays
out tasks (AsyncioDebug: TaskObj 168 bytes, name 136, awaited_by 96,
is_task 108, awaited_by_is_set 109, coro 128, node 152) and coroutines
(_Py_DebugOffsets: gi_iframe 72, gi_frame_state 67; the frame's
f_executable 0, instr_ptr 56, stackpointer 64; a set's used 24, mask 32,
table 40), behind the harness's first byte (and table). See the harness
for what each seed holds."""

import os
import struct

BASE = 0x10000
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "asyncio")
TABLE = struct.pack("<13Q", 168, 136, 96, 108, 109, 128, 152, 225864, 10880, 936, 864, 872, 880)
CORO_TYPE, FUT_TYPE, CODE = BASE + 0x3f00, BASE + 0x3f40, BASE + 0x3f80


class Mem:
    def __init__(self, size=0x4000):
        self.b = bytearray(size)

    def q(self, off, val):
        struct.pack_into("<Q", self.b, off, val)

    def byte(self, off, val):
        struct.pack_into("<b", self.b, off, val)


def task(m, off, coro, name=0, by=0, is_set=0):
    m.q(off + 96, by)
    m.byte(off + 108, 1)
    m.byte(off + 109, is_set)
    m.q(off + 128, coro)
    m.q(off + 136, name)


def coro(m, off, state, awaits=None, slot=None, typ=CORO_TYPE):
    """A coroutine at off; suspended in an await (state -1) its stack top at slot is awaits."""
    m.q(off + 8, typ)
    m.byte(off + 67, state)
    m.q(off + 72, CODE | 1)             # f_executable, tagged
    m.q(off + 72 + 56, CODE + 0x40)     # instr_ptr
    if awaits is not None:
        m.q(off + 72 + 64, BASE + slot + 8)
        m.q(slot, awaits | 1)


def link(m, head, nodes):
    """A circular list: head, then the nodes, back to head."""
    ring = [BASE + head] + [BASE + n for n in nodes]
    for i, n in enumerate(ring):
        m.q(n - BASE, ring[(i + 1) % len(ring)])
        m.q(n - BASE + 8, ring[i - 1])


def three():
    m = Mem()
    link(m, 0, [0x100 + 152, 0x300 + 152, 0x500 + 152])
    link(m, 0x10, [])
    task(m, 0x100, BASE + 0x800, name=BASE + 0x3000)                    # running
    task(m, 0x300, BASE + 0x900, by=BASE + 0xd00, is_set=1)             # awaited by a set
    task(m, 0x500, BASE + 0xb00, by=BASE + 0x100)                       # awaited by the first
    coro(m, 0x800, 0)
    coro(m, 0x900, -1, awaits=BASE + 0xa00, slot=0xc00)
    coro(m, 0xa00, -2)
    coro(m, 0xb00, -1, awaits=BASE + 0x3f00, slot=0xc10)                # a future: the chain ends
    m.q(0x3f00 + 8, FUT_TYPE)
    m.q(0xd00 + 24, 2)
    m.q(0xd00 + 32, 3)
    m.q(0xd00 + 40, BASE + 0xe00)
    m.q(0xe00, BASE + 0x100)
    m.q(0xe10, BASE + 0x500)
    m.q(0xe20, BASE + 0x3f40)                                           # a dummy key
    return m


def future_iter():
    """three, but the third task awaits the second through a future's iterator:
    an object of type "_asyncio.FutureIter" whose word after the header is the task."""
    m = three()
    coro(m, 0xb00, -1, awaits=BASE + 0x3e00, slot=0xc10)
    m.q(0x3e00 + 8, BASE + 0x3ec0)                                      # the iterator
    m.q(0x3e00 + 16, BASE + 0x300)
    m.q(0x3ec0 + 24, BASE + 0x3800)                                     # its type's tp_name
    m.b[0x3800:0x3800 + 20] = b"_asyncio.FutureIter\0"
    m.q(0x300 + 8, BASE + 0x3e80)                                       # the task's type
    m.q(0x3e80 + 24, BASE + 0x3840)
    m.b[0x3840:0x3840 + 14] = b"_asyncio.Task\0"
    return m


def legacy():
    """3.12's layout (no list, no awaited_by): three task addresses in the first
    words, the first running; the second's coroutine awaits a coroutine that
    awaits the third task through its future iterator (stacktop 1 at 64,
    localsplus at 72); the third's awaits itself through one."""
    task_type, it_type = BASE + 0x3f60, 0x3ec0
    m = Mem()
    m.q(0, BASE + 0x100)
    m.q(8, BASE + 0x300)
    m.q(16, BASE + 0x500)
    m.q(24, BASE + 0x300)                                               # listed twice: once
    m.q(32, BASE + 0x3000)                                              # no task
    for off, c in ((0x100, 0x800), (0x300, 0x900), (0x500, 0xb00)):
        m.q(off + 8, task_type)
        m.q(off + 136, BASE + c)
    def coro12(off, state, stack_top=None, typ=CORO_TYPE):
        m.q(off + 8, typ)
        m.byte(off + 67, state)
        m.q(off + 72, CODE)                                             # f_code, untagged
        m.q(off + 72 + 56, CODE + 0x40)
        if stack_top is not None:
            struct.pack_into("<i", m.b, off + 72 + 64, 1)
            m.q(off + 72 + 72, stack_top)
    coro12(0x800, 0)
    coro12(0x900, -1, BASE + 0xa00)
    coro12(0xa00, -1, BASE + 0x3e00)
    coro12(0xb00, -1, BASE + 0x3e40)
    for it, fut in ((0x3e00, 0x500), (0x3e40, 0x500)):
        m.q(it + 8, BASE + it_type)
        m.q(it + 16, BASE + fut)
    m.q(it_type + 24, BASE + 0x3800)
    m.b[0x3800:0x3800 + 20] = b"_asyncio.FutureIter\0"
    return m


def legacy_gather():
    """legacy, and the ninth word a gather's children list (a PyListObject:
    ob_size at 16, ob_item at 24) that the first task awaits: the second and
    third tasks, an object that is no task, and the first task itself."""
    m = legacy()
    m.q(64, BASE + 0x3a00)
    m.q(0x3a00 + 16, 4)
    m.q(0x3a00 + 24, BASE + 0x3a40)
    for i, item in enumerate((0x300, 0x500, 0x3000, 0x100)):
        m.q(0x3a40 + 8 * i, BASE + item)
    return m


def seeds():
    m = three()
    yield "three", b"\0" + m.b
    yield "three_table", b"\1" + TABLE + m.b
    m = three()
    m.q(0x500 + 152, BASE + 0x100 + 152)                                # back into the list
    yield "list_cycle", b"\0" + m.b
    m = three()
    coro(m, 0xa00, -1, awaits=BASE + 0xa00, slot=0xc20)                 # awaits itself
    yield "self_await", b"\0" + m.b
    m = Mem(0x8000)                                                     # deeper than the bound
    link(m, 0, [0x100 + 152])
    link(m, 0x10, [])
    task(m, 0x100, BASE + 0x1000)
    for i in range(100):
        at = 0x1000 + 0xa0 * i
        coro(m, at, -1, awaits=BASE + at + 0xa0, slot=0x7000 + 16 * i)
    yield "deep_chain", b"\0" + m.b
    m = three()
    m.q(0xd00 + 32, 1 << 40)                                            # an absurd mask
    yield "set_mask", b"\0" + m.b
    yield "future_iter", b"\0" + future_iter().b
    yield "legacy", b"\2" + legacy().b
    yield "legacy_gather", b"\2" + legacy_gather().b
    m = legacy_gather()
    m.q(0x3a00 + 16, 1 << 40)                                           # an absurd length
    yield "gather_long", b"\2" + m.b


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
