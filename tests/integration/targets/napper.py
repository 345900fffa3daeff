"""A thread that sleeps 20 ms at a time (many switches out, each where the
thread went to sleep): nap()'s line calls time.sleep, which waits in libc's
clock_nanosleep (or nanosleep, or select, before 3.11).

Writes $PBP_READY: {"pid", "version"} once it naps. Runs until killed.
Works on Python 3.6+."""

import json
import os
import sys
import time

from pbp_target import write_json


def nap():
    while True:
        time.sleep(0.02)  # mark: nap


def main():
    ready = os.environ["PBP_READY"]
    write_json(ready, {"pid": os.getpid(), "version": "%d.%d" % sys.version_info[:2]})
    nap()


main()
