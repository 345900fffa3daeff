"""A target that spends its time in libz: squeeze() compresses a 1.2 MB
buffer again and again (zlib.compress releases the GIL while deflate runs).

Writes $PBP_READY: {"pid", "version"} once it compresses. Runs until killed.
Works on Python 3.6+."""

import random
import zlib

from pbp_target import say_ready


def squeeze(data):
    while True:
        zlib.compress(data, 6)  # mark: squeeze


def main():
    rnd = random.Random(19)
    words = [bytes(rnd.choice(b"abcdefghijklmnop") for _ in range(rnd.randint(2, 9)))
             for _ in range(4000)]
    data = b" ".join(rnd.choice(words) for _ in range(200000))
    zlib.compress(data[:65536])
    say_ready()
    squeeze(data)


main()
