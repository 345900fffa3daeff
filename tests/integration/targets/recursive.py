"""A thread that recurses to a random depth and returns, forever: its stack
changes under any reader from outside (on 3.6-3.10 the frames it returns
from are freed and reused). What a torn read looks like: recurse() frames
with no main() and <module> under them.

Writes $PBP_READY: {"pid", "version"} once it recurses. Runs until killed.
Works on Python 3.6+."""

import random

from pbp_target import say_ready


def recurse(n):
    if n:
        recurse(n - 1)


def main():
    say_ready()
    while True:
        recurse(random.randint(1, 100))


main()
