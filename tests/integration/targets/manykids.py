"""Target: a process with more children than pybpfprof's table of
processes keeps (4,096), each paused until killed with the parent.

    manykids.py N

Forks N children that wait in pause(); says ready once all are there, and
kills them all when it is stopped or after 120 s. Python 3.6+ syntax."""

import os
import signal
import sys
import time

from pbp_target import say_ready


def main():
    kids = []
    try:
        for _ in range(int(sys.argv[1])):
            pid = os.fork()
            if pid == 0:
                signal.pause()
                os._exit(0)
            kids.append(pid)
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        say_ready(children=len(kids))
        time.sleep(120)
    finally:
        for k in kids:
            os.kill(k, signal.SIGKILL)
        for k in kids:
            os.waitpid(k, 0)


main()
