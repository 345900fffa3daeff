"""Which interpreters the kernel names code objects for from its cache
(bpf/walk.bpf.h, docs/internals.md): where it finds a count that moves
whenever a code object could have taken a freed one's address."""

import glob
import os
import re
import subprocess

from conftest import REPO


def probed_code_counts():
    """The 3.13 versions whose count of code objects made the profiler knows
    where to find: code_new_table's entries in the generated offsets."""
    with open(os.path.join(REPO, "user", "cpython", "gen", "offsets.h")) as f:
        text = f.read()
    table = text[text.find("code_new_table[]"):]
    return set(tuple(int(x) for x in v.split("."))
               for v in re.findall(r"/\* (3\.13\.\d+) \*/", table))


def has_code_count_symbol(interp):
    """3.12 keeps its count of code objects made in a static,
    _Py_next_func_version: found only in a file that kept .symtab."""
    exe = os.path.realpath(interp.host_executable)
    files = [exe] + glob.glob(os.path.join(os.path.dirname(os.path.dirname(exe)), "lib",
                                           "libpython3.12*.so*"))
    for f in files:
        r = subprocess.run(["nm", f], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if re.search(r" _Py_next_func_version$", r.stdout, re.M):
            return True
    return False


def kernel_code_cache(interp):
    """3.14+ (a count of code objects freed), a 3.13 of the layout
    gen-offsets.sh probed and a 3.12 whose library kept its symbols (a
    count of those made)."""
    if interp.version[:2] == (3, 12):
        return has_code_count_symbol(interp)
    return interp.version[:2] >= (3, 14) or tuple(interp.version) in probed_code_counts()
