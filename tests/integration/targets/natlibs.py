"""A target whose time is in shared libraries' C code, each called from its
own Python line: digest() hashes a 4 MB buffer with hashlib.sha256 (OpenSSL's
libcrypto; an interpreter built without OpenSSL, as our 3.14t, uses its own
_sha2 module, HACL* code), squeeze() compresses an eighth of it with zlib (libz); both
release the GIL for a buffer that large. When numpy can be imported (Debian's python3-numpy
on /usr/bin/python3) a second thread multiplies two 300x300 matrices
(BLAS's dgemm, one BLAS thread).

Writes $PBP_READY: {"pid", "version", "numpy", "sha256": the module whose
C code hashes, "_hashlib" (OpenSSL) or "_sha2"} once both run. Runs until
killed. Works on Python 3.6+."""

import hashlib
import os
import random
import threading
import zlib

from pbp_target import say_ready

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    import numpy
except ImportError:
    numpy = None


def digest(data):
    return hashlib.sha256(data).digest()  # mark: digest


def squeeze(data):
    return zlib.compress(data, 1)  # mark: squeeze


def crunch():
    rnd = numpy.random.default_rng(19)
    a = rnd.random((300, 300))
    b = rnd.random((300, 300))
    while True:
        a @ b  # mark: matmul


def main():
    rnd = random.Random(19)
    words = [bytes(rnd.choice(b"abcdefghijklmnop") for _ in range(rnd.randint(2, 9)))
             for _ in range(4000)]
    data = b" ".join(rnd.choice(words) for _ in range(700000))
    if numpy is not None:
        threading.Thread(target=crunch, name="crunch", daemon=True).start()
    digest(data)
    squeeze(data)
    say_ready(numpy=numpy is not None, sha256=hashlib.sha256.__module__)
    part = data[:len(data) // 8]  # about as long to compress as data to hash
    while True:
        digest(data)
        squeeze(part)


main()
