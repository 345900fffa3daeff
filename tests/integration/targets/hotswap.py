"""Target for test_diff: one program whose hot function is chosen on its
command line, so that two runs differ in a known way.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    hotswap.py HOT       HOT is alpha or beta: the main thread spins in a
                         loop that gives HOT four slices of work to the
                         other's one (about 80 % and 20 % of its CPU)

Writes $PBP_READY: {"pid", "hot"} once the loop runs.
"""

import sys

from pbp_target import say_ready


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def alpha(n):
    return spin(n)


def beta(n):
    return spin(n)


def main():
    hot = sys.argv[1]
    funcs = {"alpha": (alpha, beta), "beta": (beta, alpha)}
    if hot not in funcs:
        sys.exit("hotswap.py: HOT is alpha or beta")
    heavy, light = funcs[hot]
    say_ready(hot=hot)
    while True:
        heavy(40000)
        light(10000)


main()
