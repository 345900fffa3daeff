"""A null device of the tests' own: a character device 1:3 made with mknod
in a temporary directory, so that no test opens the machine's /dev/null
(subprocess.DEVNULL does)."""

import atexit
import os
import shutil
import stat
import tempfile

_made = []


def null_path():
    """The path of this process's own null device, made on first use."""
    if not _made:
        d = tempfile.mkdtemp(prefix="pbp-null-")
        atexit.register(shutil.rmtree, d, True)
        path = os.path.join(d, "null")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        _made.append(path)
    return _made[0]


def null(mode="r+b"):
    """An open file on it: what stdin, stdout or stderr=subprocess.DEVNULL gave."""
    return open(null_path(), mode)
