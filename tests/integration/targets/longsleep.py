"""One thread, asleep for good, that never started another: on 3.6 its GIL
is never created (3.6 makes it when a second thread starts).

Writes $PBP_READY: {"pid", "version"}, then sleeps until killed.
Works on Python 3.6+."""

import json
import os
import sys
import time


def longsleep():
    time.sleep(100000)


def main():
    ready = os.environ["PBP_READY"]
    with open(ready + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "version": "%d.%d" % sys.version_info[:2]}, f)
    os.rename(ready + ".tmp", ready)
    longsleep()


main()
