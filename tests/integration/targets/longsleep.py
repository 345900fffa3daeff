"""One thread, asleep for good, that never started another: on 3.6 its GIL
is never created (3.6 makes it when a second thread starts).

Writes $PBP_READY: {"pid", "version"}, then sleeps until killed.
Works on Python 3.6+."""

import time

from pbp_target import say_ready


def longsleep():
    time.sleep(100000)


def main():
    say_ready()
    longsleep()


main()
