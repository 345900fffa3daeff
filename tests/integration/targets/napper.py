"""A thread that sleeps 20 ms at a time (many switches out, each where the
thread went to sleep): nap()'s line calls time.sleep, which waits in libc's
clock_nanosleep (or nanosleep, or select, before 3.11).

Writes $PBP_READY: {"pid", "version"} once it naps. Runs until killed.
Works on Python 3.6+."""

import time

from pbp_target import say_ready


def nap():
    while True:
        time.sleep(0.02)  # mark: nap


def main():
    say_ready()
    nap()


main()
