"""A target made of named worker threads whose behaviour is known.

    workers.py KIND[*N] ...     e.g. workers.py spinner sleeper waiter hasher
                                     workers.py spinner idle*200

Kinds: spinner (pure Python loop, holds the GIL), sleeper (time.sleep(0.02) loop),
waiter (select() on a silent pipe), hasher (sha256 of 64 MiB buffers: the GIL
is released while hashing; blake2b where sha256 is not OpenSSL's and keeps it), idle (blocked on a lock), spawner (after
1 s starts one idle thread named "late", its native id going to
$PBP_READY.late), deep (spins 300 frames
deep in recurse()), split (alternates two
functions, one doing twice the work of the other, and measures the CPU time
of each with time.thread_time), napper (sleeps 10 ms in nap_short, then 30 ms
in nap_long, and so on: wakes 50 times a second, 1/4 of its time in the first).

Writes $PBP_READY: {"pid", "version", "threads": [{"kind", "name", "native_id"}]}
once every thread runs; for split, $PBP_READY.split gets {"light": s, "heavy": s}
of CPU time, rewritten every 0.2 s. The main thread sleeps until killed.
Works on Python 3.6+."""

import ctypes
import hashlib
import os
import random
import select
import sys
import threading
import time

from pbp_target import give_threads_native_ids, native_id, ready_path, say_ready, write_json


give_threads_native_ids()


def thread_time():
    """time.thread_time is 3.7+."""
    return time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)


started = []
lock = threading.Lock()


def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def spinner():
    while True:
        work(10000)


def sleeper():
    while True:
        time.sleep(0.02)


def nap_short():
    time.sleep(0.01)  # mark: nap-short


def nap_long():
    time.sleep(0.03)  # mark: nap-long


def napper():
    while True:
        nap_short()
        work(200)
        nap_long()
        work(200)


def waiter():
    r, w = os.pipe()
    select.select([r], [], [])


try:
    import _hashlib  # noqa: F401 (OpenSSL's sha256 releases the GIL while it hashes)
    HASH = hashlib.sha256
except ImportError:
    HASH = hashlib.blake2b  # a 3.6 built without OpenSSL: its _sha256 holds the GIL


def hasher():
    buf = b"x" * (64 << 20)
    while True:
        HASH(buf).digest()


PARK = threading.Lock()
PARK.acquire()


def idle():
    PARK.acquire()


def spawner():
    time.sleep(1.0)
    late = threading.Thread(target=idle, name="late", daemon=True)
    late.start()
    write_json(ready_path(".late"), {"native_id": late.native_id})
    PARK.acquire()


# Random sizes: a strictly periodic loop aliases with any fixed sampling period.
def light():
    work(random.randint(2000, 8000))


def heavy():
    work(random.randint(4000, 16000))


def split():
    spent = {"light": 0.0, "heavy": 0.0}
    last = time.monotonic()
    while True:
        for name, fn in (("light", light), ("heavy", heavy)):
            t0 = thread_time()
            fn()
            spent[name] += thread_time() - t0
        if time.monotonic() - last > 0.2:
            last = time.monotonic()
            write_json(ready_path(".split"), spent)


def recurse(n):
    if n:
        return recurse(n - 1)  # mark: deep-call
    while True:  # mark: deep-loop
        work(1000)  # mark: deep-spin


def deep():
    recurse(299)  # mark: deep-entry


KINDS = {"deep": deep, "spinner": spinner, "sleeper": sleeper, "waiter": waiter, "hasher": hasher,
         "idle": idle, "split": split, "spawner": spawner, "napper": napper}


def run(kind, name):
    with lock:
        started.append({"kind": kind, "name": name, "native_id": native_id()})
    KINDS[kind]()


def main():
    specs = []
    for arg in sys.argv[1:]:
        kind, _, count = arg.partition("*")
        specs += [kind] * int(count or 1)
    for i, kind in enumerate(specs):
        threading.Thread(target=run, args=(kind, "%s-%d" % (kind, i)), name="%s-%d" % (kind, i),
                         daemon=True).start()
    while True:
        with lock:
            if len(started) == len(specs):
                break
        time.sleep(0.01)
    time.sleep(0.2)  # let every thread reach its steady state
    say_ready(main_native_id=native_id(), threads=started)
    while True:
        time.sleep(3600)


main()
