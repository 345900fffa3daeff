"""Adversarial target: two functions made, run and freed in turn, each new
one most often at the address the other had just left.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    codeswap.py [replace]

The main thread compiles swap_a (first line 1) or swap_b (first line 4),
alternately, runs it from a call line of its own, and drops it: its code
object is freed before the next is made. A profile that named a code
object by what an earlier one at its address was would show swap_a
called from swap_b's line, or the other way round. Writes $PBP_READY
{"pid", "version"} once it turns.

With replace (3.8+): swap_c and swap_d in turn, copies of one code object
(CodeType.replace) under a name made anew each time, freed with it: the
same first line, file and line table, and most often the name string at
the address the other's had. Only the interpreter's own count of code
objects made (co_version, 3.12+) tells them apart.
"""

import sys
import types

from pbp_target import say_ready

BODY = "    x = 0\n    for i in range(n):\n        x += i\n    return x\n"
SRC_A = "def swap_a(n):\n" + BODY
SRC_B = "\n\n\ndef swap_b(n):\n" + BODY


def main_replace():
    base = {}
    exec(compile(SRC_A, "<swap>", "exec"), base)
    i = 0
    while True:
        i += 1
        name = "".join(["swap_", "cd"[i % 2]])     # a new str, freed with the code
        kw = {"co_qualname": name} if sys.version_info >= (3, 11) else {}
        f = types.FunctionType(base["swap_a"].__code__.replace(co_name=name, **kw), base)
        del name, kw
        if i % 2:
            f(3000)  # mark: call-d
        else:
            f(3000)  # mark: call-c
        del f
        if i == 200:
            say_ready()


def main():
    i = 0
    while True:
        i += 1
        ns = {}
        if i % 2:
            exec(compile(SRC_A, "<swap>", "exec"), ns)
            ns["swap_a"](3000)  # mark: call-a
        else:
            exec(compile(SRC_B, "<swap>", "exec"), ns)
            ns["swap_b"](3000)  # mark: call-b
        if i == 200:
            say_ready()


if sys.argv[1:] == ["replace"]:
    main_replace()
else:
    main()
