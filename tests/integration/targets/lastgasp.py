"""Target: code first run just before the process exits.

Runs on CPython 3.8 to 3.14 (keep the syntax at 3.8's level).

    lastgasp.py TRIGGER WARM LAST

Writes $PBP_READY {"pid", "version"}, then waits (asleep) until the file
TRIGGER exists. Then it burns the CPU for WARM seconds in warm(), compiles a
function never run before, last_words(), burns LAST seconds in it, and ends
with sys.exit(0): the interpreter finalizes and the process is gone, taking
last_words' code object with it.
"""

import os
import sys
import time

from pbp_target import say_ready


LAST_WORDS = '''
def last_words(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
'''


def warm(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main():
    trigger, warm_s, last_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    say_ready()
    while not os.path.exists(trigger):
        time.sleep(0.01)
    warm(warm_s)
    scope = {"time": time}
    exec(compile(LAST_WORDS, "<last words>", "exec"), scope)
    scope["last_words"](last_s)
    sys.exit(0)


main()
