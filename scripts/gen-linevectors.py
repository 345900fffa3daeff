#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write line-table test vectors for user/cpython/linetable.c.

Run it once with every CPython version to cover (3.8 and later):

    python3.X scripts/gen-linevectors.py [--name NAME] [--outdir DIR]

It compiles a fixed set of awkward sources plus a few stdlib modules with the
running interpreter and writes, for every code object (nested ones included),
the raw line table and the line the interpreter reports for every byte offset
of its bytecode. The C test (tests/unit/test_linetable.c) decodes the table
and must give the same answers. Output: DIR/linevectors-NAME.txt, NAME
defaulting to "3.X".

The expected lines come from the interpreter's own Python-level views
(dis.findlinestarts on 3.8/3.9, code.co_lines() on 3.10+) and are checked
here against PyCode_Addr2Line() (called through ctypes: what f_lineno uses)
and, on 3.11+, co_positions(). Any disagreement aborts the run, so a vector
file only ever holds answers the interpreter agrees with itself on.

File format, one record per line, space-separated:
    version <full version> <kind>        kind: lnotab | linetable310 | locations
    code <name> <firstlineno> <code bytes> <table hex or ->
    lines <line>x<count> ...             expected line per byte offset, from 0,
                                         run-length coded; -1 = no line
    edge <line at -2> <line at code bytes> <line at code bytes + 1000>
    end
"""

import argparse
import ctypes
import dis
import importlib.util
import os
import sys
import types

VER = sys.version_info[:2]
if VER < (3, 8):
    sys.exit("gen-linevectors: needs CPython 3.8 or later")
KIND = "lnotab" if VER < (3, 10) else "linetable310" if VER < (3, 11) else "locations"

# Stdlib modules sampled: real compiler output, with every construct the
# hand-written sources below might miss.
STDLIB = ["json", "json.decoder", "json.encoder", "json.scanner", "re", "http.server"]
STDLIB_MAX_CODES = 40           # code objects taken from each stdlib module
SIZE_LIMIT = 300 * 1024         # keep each vector file modest

_addr2line = ctypes.pythonapi.PyCode_Addr2Line
_addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
_addr2line.restype = ctypes.c_int


def interp_line(code, off):
    """The line CPython itself reports for a byte offset (f_lineno)."""
    return _addr2line(code, off)


# --------------------------------------------------------------- sources

def tricky_sources():
    """(name, source) pairs, each stressing one corner of the formats."""
    out = []

    # Statements more than 255 (and 127) lines apart: deltas split over
    # several entries; a loop whose test comes back after a long body is a
    # big negative jump.
    gap = "\n" * 300
    out.append(("gaps", (
        "def gaps(a):\n"
        "    x = 1\n" + gap +
        "    y = 2\n" + "    # comment\n" * 200 +
        "    while a:\n" +
        "        a -= 1\n" + gap +
        "        x += a\n" + gap +
        "    for i in range(a):\n" +
        "        y += i\n" + "\n" * 1000 +
        "    return x + y\n")))

    # A far-away first line, and a 70000-line jump inside one function.
    out.append(("far", "\n" * 99999 + (
        "def far(a):\n"
        "    b = a\n" + "\n" * 70000 +
        "    return b\n"
        "def after_far():\n"
        "    return 1\n")))

    # Lines without code, docstrings, pass, ellipsis, dead branches.
    out.append(("nocode", '''
def empty():
    pass

def doc_only():
    """Only a docstring."""

def dots(): ...

def dead(x):
    # comment only

    if 0:
        x = 1
    if False:
        return 2
    while 0:
        pass
    return x
'''))

    # Lambdas, comprehensions, generators, async, closures.
    out.append(("nested", '''
import asyncio
def outer(seq):
    f = lambda v: (v +
                   1)
    g = [f(v) for v in seq
         if v]
    d = {k: v for k, v in
         zip(seq, seq)}
    s = {v for v in seq}
    ge = (v * 2
          for v in seq)
    def inner():
        nonlocal f
        return f
    return g, d, s, list(ge), inner

def gen(n):
    for i in range(n):
        yield i
    yield from range(n)
    x = yield
    return x

async def agen(n):
    async with n as m:
        async for v in m:
            yield v

async def afn(n):
    await asyncio.sleep(0)
    return [v async for v in n]
'''))

    # Exceptions: handlers, finally copies, with-cleanup, re-raise.
    out.append(("exc", '''
def exc(f):
    try:
        f()
    except ValueError as e:
        print(e)
    except (TypeError,
            KeyError):
        raise
    else:
        return 1
    finally:
        print("done")
    with open(f) as a, \\
         open(f) as b:
        a.read()
    try:
        pass
    finally:
        return 2

def loop_exc(xs):
    for x in xs:
        try:
            continue
        finally:
            break
'''))

    # Decorators: firstlineno is the first decorator's line.
    out.append(("deco", '''
import functools

@functools.lru_cache(
    maxsize=None)
@staticmethod
def decorated(a):
    return a

class K(
        object):
    """Class body is its own code object."""
    attr = 1

    @property
    def p(self):
        return self.attr

    @p.setter
    def p(self, v):
        self.attr = v
'''))

    # Long lines: columns past 127 (no short form) and past 255 (long form).
    pad = " + ".join("v%d" % i for i in range(120))
    out.append(("longline", (
        "def longline(" + ", ".join("v%d" % i for i in range(120)) + "):\n"
        "    r = " + pad + "\n"
        "    s = [" + ", ".join("'%s'" % ("x" * 40) for _ in range(30)) + "]\n"
        "    return r, s, " + "(" * 20 + "r" + ")" * 20 + ".bit_length()\n")))

    # Expressions spread over lines: end lines, negative and zero deltas.
    out.append(("multiline", '''
def multiline(a, b):
    x = (a
         +
         b)
    y = call(a,
             b,
             key=[
                 a,
                 b,
             ])
    z = (a if
         b
         else
         x)
    return (x,
            y,
            z)[
        0]
'''))

    # Big bodies: EXTENDED_ARG jumps, many names and constants, one line
    # with many instructions (range lengths > 254 bytes in 3.8-3.10).
    body = "".join("        v%d = a + %d\n" % (i, i) for i in range(400))
    one = "    t = (" + " + ".join("a * %d" % i for i in range(300)) + ")\n"
    out.append(("big", (
        "def big(a):\n"
        "    if a:\n" + body +
        "    else:\n"
        "        return 0\n" + one +
        "    return t\n")))

    # Statements on one line; code on line 1 of the module.
    out.append(("oneline", "x = 1; y = 2; z = x if y else 3\n"
                           "def f(): return 1; pass\n"
                           "class C: pass\n"))

    if VER >= (3, 10):
        out.append(("match", '''
def m(cmd):
    match cmd:
        case [x,
              y]:
            return x
        case {"k": v} if v:
            return v
        case str() | bytes():
            pass
        case _:
            return None
'''))
    if VER >= (3, 11):
        out.append(("exgroup", '''
def eg(f):
    try:
        f()
    except* ValueError:
        pass
    except* (TypeError, KeyError) as g:
        print(g)
'''))
    if VER >= (3, 12):
        out.append(("typeparams", '''
type Alias[T] = list[T]
def tp[T: int, *Ts](a: T) -> T:
    return f"{a!r:>{10}} {
        a}"
class G[T]:
    def m(self) -> T: ...
'''))
    return out


def stdlib_sources():
    out = []
    for mod in STDLIB:
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, "rb") as f:
            out.append((mod, f.read()))
    return out


# --------------------------------------------------------------- vectors

def walk(code):
    """The code object and every code object nested in it, depth first."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)


def raw_table(code):
    return code.co_lnotab if VER < (3, 10) else code.co_linetable


def expected_lines(code):
    """Line per byte offset, from the interpreter's Python-level view."""
    n = len(code.co_code)
    if VER < (3, 10):
        # lnotab: an offset belongs to the last line start at or before it.
        lines = [-1] * n
        starts = sorted(dis.findlinestarts(code))
        for i, (start, line) in enumerate(starts):
            stop = starts[i + 1][0] if i + 1 < len(starts) else n
            for off in range(max(start, 0), min(stop, n)):
                lines[off] = line
        return lines
    lines = [-1] * n
    for start, end, line in code.co_lines():
        for off in range(max(start, 0), min(end, n)):
            lines[off] = -1 if line is None else line
    return lines


def positions(code):
    """co_positions() per code unit, None as -1 (3.11+)."""
    return [tuple(-1 if v is None else v for v in p) for p in code.co_positions()]


def rle(values, fmt):
    out, prev, count = [], None, 0
    for v in values:
        if v == prev:
            count += 1
            continue
        if count:
            out.append("%sx%d" % (fmt(prev), count))
        prev, count = v, 1
    if count:
        out.append("%sx%d" % (fmt(prev), count))
    return " ".join(out)


class Mismatch(Exception):
    pass


def check(code, lines, pos):
    """Make sure the interpreter agrees with itself on every offset."""
    where = "%s:%d %s" % (code.co_filename, code.co_firstlineno, code.co_name)
    for off, line in enumerate(lines):
        got = interp_line(code, off)
        if got != line:
            raise Mismatch("%s: offset %d: view says %d, PyCode_Addr2Line %d"
                           % (where, off, line, got))
    if pos is None:
        return
    if len(pos) * 2 != len(lines):
        raise Mismatch("%s: %d positions for %d bytes" % (where, len(pos), len(lines)))
    for unit, p in enumerate(pos):
        if p[0] != lines[unit * 2]:
            raise Mismatch("%s: offset %d: co_positions line %d, co_lines %d"
                           % (where, unit * 2, p[0], lines[unit * 2]))


def record(code):
    tab = raw_table(code)
    lines = expected_lines(code)
    pos = positions(code) if VER >= (3, 11) else None
    check(code, lines, pos)
    n = len(lines)
    name = getattr(code, "co_qualname", code.co_name).replace(" ", "_") or "?"
    rec = ["code %s %d %d %s" % (name, code.co_firstlineno, n, tab.hex() or "-"),
           "lines " + rle(lines, str),
           "edge %d %d %d" % (interp_line(code, -2), interp_line(code, n),
                              interp_line(code, n + 1000))]
    rec.append("end")
    return "\n".join(rec) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", default="%d.%d" % VER,
                    help="file name part (default: major.minor)")
    ap.add_argument("--outdir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", "data"))
    args = ap.parse_args()

    out = ["# generated by scripts/gen-linevectors.py with %s; do not edit\n"
           % sys.version.replace("\n", " "),
           "version %s %s\n" % (sys.version.split()[0], KIND)]
    size = sum(map(len, out))
    counts = {"tricky": 0, "stdlib": 0}
    for group, sources in (("tricky", tricky_sources()), ("stdlib", stdlib_sources())):
        for name, src in sources:
            top = compile(src, "<%s>" % name, "exec", dont_inherit=True)
            taken = 0
            for code in walk(top):
                if group == "stdlib" and taken >= STDLIB_MAX_CODES:
                    break
                rec = record(code)
                if size + len(rec) > SIZE_LIMIT:
                    if group == "tricky":
                        sys.exit("gen-linevectors: hand-made vectors exceed the size limit")
                    continue        # a smaller one may still fit
                out.append(rec)
                size += len(rec)
                taken += 1
                counts[group] += 1

    os.makedirs(args.outdir, exist_ok=True)
    path = os.path.join(args.outdir, "linevectors-%s.txt" % args.name)
    with open(path, "w") as f:
        f.writelines(out)
    print("%s: %d hand-made + %d stdlib code objects, %d bytes"
          % (os.path.normpath(path), counts["tricky"], counts["stdlib"], size))


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        sys.exit("gen-linevectors: interpreter disagrees with itself: %s" % e)
