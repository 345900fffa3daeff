"""--native on every layout family (issue 19): a C extension built by the
target against the interpreter's own headers (natext.py, pbpnat.c) reads
Python -> C -> Python callback -> C in order, and the evaluation loop's own
frames are gone: before 3.11 one C activation per Python frame, 3.11 its
entry frames, 3.12+ the shim frame. One interpreter per layout family
(PBP_ALL_FAMILIES=1: every one)."""

import os
import re
import subprocess

import pytest

from conftest import TARGETS
from profile import parse_collapsed
from test_native import _machinery, last_positions


def _prebuilt(interp):
    """A chroot has no compiler: build pbpnat.c on the host against the
    chroot's own Python headers (its glibc's after the host's), into a
    directory the chrooted target sees; the env that tells natext.py."""
    if not interp.chrooted:
        return {}
    # platinclude holds pyconfig.h: the same directory once installed, the
    # build directory for an interpreter run from its build tree (3.14t).
    ask = ("import sysconfig as s; p = s.get_paths(); "
           "print(p['include'], p['platinclude'], s.get_config_var('EXT_SUFFIX'))")
    inc, platinc, suffix = subprocess.check_output(interp.argv + ["-c", ask],
                                                   universal_newlines=True).split()
    host_dir, in_dir = interp.mkdtemp()
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-O1", "-g",
                           "-I", interp.root + inc, "-I", interp.root + platinc,
                           "-idirafter", interp.root + "/usr/include",
                           os.path.join(TARGETS, "pbpnat.c"),
                           "-o", os.path.join(host_dir, "pbpnat" + suffix)])
    return {"PBP_NATEXT_SO": os.path.join(in_dir, "pbpnat" + suffix)}


@pytest.mark.families
def test_native_stack_python_c_python_c(interp, start_target, pybpfprof, tmp_path):
    """--native: a C function called from Python that calls back into
    Python, whose callback spins in C: each sample reads, root to leaf,
    outer -> pbpnat_call -> in_callback -> pbpnat_spin -> spin_inner, and
    the evaluation loop's own frames are gone. Recorded as pprof and read
    back: the native frames are pprof functions like the others."""
    _, pid, _ = start_target(interp, "natext.py", timeout=60, env=_prebuilt(interp))
    out = tmp_path / "native.pb.gz"
    r = pybpfprof("-p", pid, "-d", "1.5", "-F", "199", "--native", "--stats=json", "-o", out)
    assert r.returncode == 0, r.stderr
    back = pybpfprof("convert", "-i", out)
    assert back.returncode == 0, back.stderr
    stacks = parse_collapsed(back.stdout)
    want = ["outer (", "[native] pbpnat_call (", "in_callback (", "[native] pbpnat_spin (",
            "[native] spin_inner ("]
    total = ordered = 0
    for frames, count in stacks:
        if not any(f.startswith("in_callback (") for f in frames):
            continue
        total += count
        at = last_positions(frames, want)
        if -1 not in at and at == sorted(at):
            ordered += count
        assert not any(f.startswith("[native] _PyEval_EvalFrameDefault") for f in frames), frames
    assert total >= 50, back.stdout[-3000:]
    assert ordered >= total * 0.8, (ordered, total, back.stdout[-3000:])
    assert '"native_stacks":' in r.stderr
    # pbpnat_call's PyObject_CallObject and the interpreter's _PyEval_Vector
    # (or _PyFunction_Vectorcall) folded: the callback right after pbpnat_call.
    # Where the build names them (not sid's, whose stripped machinery is one
    # nameless frame of the interpreter's file).
    assert not _machinery(stacks), _machinery(stacks)[:5]
    if not interp.chrooted:
        assert re.search(r'"native_stacks":{[^}]*"folded":[1-9]', r.stderr), r.stderr[-2000:]
