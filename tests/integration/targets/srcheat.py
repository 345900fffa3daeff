"""Target for test_html_source: known hot lines, a source file over the
page's per-file budget and one deleted once imported.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    srcheat.py [SECONDS]   three threads, each waiting in a known place
                        (for SECONDS, then it exits; default: until killed):
      main thread       hot(): most of its time asleep on the line marked
                        HOT LINE, the rest in helper() called from CALL LINE
      "big" thread      big_wait() of bigmod.py, written next to $PBP_READY
                        and over 512 KiB (comment lines after its code)
      "gone" thread     gone_wait() of gonemod.py, deleted once imported

Writes $PBP_READY: {"pid", "bigmod", "gonemod"} once the threads run.
"""

import importlib
import os
import sys
import threading
import time

from pbp_target import ready_path, say_ready

HERE = os.path.dirname(ready_path())
WAIT = "def {name}():\n    while True:\n        time.sleep(0.005)\n"


def write_module(name, code, padding=0):
    path = os.path.join(HERE, name + ".py")
    with open(path, "w") as f:
        f.write("import time\n\n\n" + code)
        f.write("# padding to make the file large\n" * padding)
    return path


def helper():
    time.sleep(0.001)


def hot(until):
    while time.monotonic() < until:
        time.sleep(0.003)  # HOT LINE
        helper()  # CALL LINE


def main():
    sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True
    big = write_module("bigmod", WAIT.format(name="big_wait"), padding=20000)
    gone = write_module("gonemod", WAIT.format(name="gone_wait"))
    threading.Thread(target=importlib.import_module("bigmod").big_wait, name="big", daemon=True).start()
    threading.Thread(target=importlib.import_module("gonemod").gone_wait, name="gone", daemon=True).start()
    os.unlink(gone)
    say_ready(bigmod=big, gonemod=gone)
    hot(time.monotonic() + float(sys.argv[1]) if len(sys.argv) > 1 else float("inf"))


main()
