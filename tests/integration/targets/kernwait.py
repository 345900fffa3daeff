"""A target whose threads are in the kernel (--kernel): one blocks in
select() on a pipe nobody writes, one sleeps in time.sleep, and the main
thread reads a file of its own (in a temp dir) and asks for random bytes,
so that its CPU time is mostly in system calls.

Writes $PBP_READY: {"pid", "version"} once all three run. Runs until killed.
Works on Python 3.6+."""

import os
import select
import tempfile
import threading
import time

from pbp_target import say_ready

PIPE_R, PIPE_W = os.pipe()


def selecting():
    while True:
        select.select([PIPE_R], [], [], 0.1)  # mark: select


def sleeping():
    while True:
        time.sleep(0.1)  # mark: sleep


def reading(fd, buf):
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", buffering=0, closefd=False) as f:
        while f.readinto(buf):  # mark: read
            pass
    os.urandom(1 << 16)  # mark: urandom


def main():
    # Its own file, gone from the temp dir at once: a killed target leaves nothing.
    d = tempfile.mkdtemp(prefix="pbp-kernwait-")
    path = os.path.join(d, "data")
    with open(path, "wb") as f:
        f.write(os.urandom(4 << 20))
    fd = os.open(path, os.O_RDONLY)
    os.unlink(path)
    os.rmdir(d)
    buf = bytearray(1 << 20)
    for fn in (selecting, sleeping):
        threading.Thread(target=fn, daemon=True).start()
    say_ready()
    while True:
        reading(fd, buf)


main()
