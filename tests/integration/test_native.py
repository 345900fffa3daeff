"""Native leaves (issue 19, the first stage): a thread on a CPU without the
GIL ends its stack with the native function it was in. zlib.compress on a
large buffer, Debian's /usr/bin/python3.11 (its libz and libpython
stripped to .dynsym) and a pyenv build: libz's frames are under the
Python line that called compress. One short recording per interpreter."""

import os

from conftest import TARGETS
from profile import marks, parse_collapsed

INTERPRETERS = ["3.11-debian-static", "3.12"]
ZLIBBER = os.path.join(TARGETS, "zlibber.py")
NATIVE = "[native, no GIL]"


def test_zlib_leaf_under_its_python_line(interp, start_target, pybpfprof):
    _, pid, _ = start_target(interp, "zlibber.py")
    r = pybpfprof("-p", pid, "-d", "1.5", "-F", "199", "--status", "--stats=json")
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(r.stdout)
    line = ":%d)" % marks(ZLIBBER)["squeeze"]
    under = [(f, c) for f, c in stacks if any(x.startswith("squeeze (") for x in f)]
    total = sum(c for _, c in under)
    assert total >= 50, r.stdout[-2000:]
    libz = 0
    for frames, count in under:
        i = max(j for j, x in enumerate(frames) if x.startswith("squeeze ("))
        assert frames[i].endswith(line), frames
        after = frames[i + 1:]
        if after[-1] == NATIVE:
            # Without the GIL: exactly one native frame, then the status.
            assert len(after) == 2 and after[0].startswith("[native] "), frames
            if "libz.so" in after[0]:
                libz += count
        else:
            assert not any(x.startswith("[native] ") for x in after), frames
    # deflate runs without the GIL: most of squeeze's samples are in libz.
    assert libz >= total // 2, (libz, total, r.stdout[-3000:])
    assert '"native_leaves":' in r.stderr
