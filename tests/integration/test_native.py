"""Native frames (issue 19). Leaves: a thread on a CPU without the GIL ends
its stack with the native function it was in; zlib.compress on a large
buffer, libz's frames under the Python line that called compress.
--native (test_native_ext.py: a C extension on every interpreter). Libraries' C code under the
Python line that called it (natlibs.py): hashlib.sha256's libcrypto, and on
Debian's /usr/bin/python3 with python3-numpy a matrix product's BLAS.
--native=fp: the kernel's frame-pointer walk through an extension built
with frame pointers (natfp.py, pbpfp.c).
Debian's /usr/bin/python3.11 (its libz and libpython stripped to .dynsym)
and a pyenv build; one target per test and interpreter, short recordings."""

import json
import os
import re
import subprocess

from conftest import TARGETS
from pprof_wire import Profile
from profile import marks, parse_collapsed

INTERPRETERS = ["3.11-debian-static", "3.12", "3.14t-sid-chroot"]
ZLIBBER = os.path.join(TARGETS, "zlibber.py")
NATLIBS = os.path.join(TARGETS, "natlibs.py")
NATFP = os.path.join(TARGETS, "natfp.py")
NATIVE = "[native, no GIL]"
# The interpreter's call machinery (natfold.c's table, some of its rows):
# folded away on the callee side of the outermost Python frame.
MACHINERY = re.compile(r"\[native\] (_?PyObject_(Call|Vectorcall|MakeTpCall|FastCall)|cfunction_|"
                       r"method_vectorcall|_PyEval_Vector|_PyFunction_Vectorcall|slot_tp_)")


def test_zlib_leaf_under_its_python_line(interp, start_target, pybpfprof):
    _, pid, _ = start_target(interp, "zlibber.py")
    r = pybpfprof("-p", pid, "-d", "1.5", "-F", "199", "--status", "--native-leaf", "--stats=json")
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
        if len(after) == 2 and after[0].startswith("[native] "):
            # Outside the interpreter (without the GIL; on 3.14t, its thread
            # state detached): exactly one native frame, then the status,
            # which a build with no GIL never says is "no GIL".
            assert after[1] == native_status(interp), frames
            if "libz.so" in after[0]:
                libz += count
        else:
            assert after == ["[running]"], frames
    # deflate runs without the GIL: most of squeeze's samples are in libz.
    assert libz >= total // 2, (libz, total, r.stdout[-3000:])
    assert '"native_leaves":' in r.stderr


def native_status(interp):
    """The status of a thread outside the interpreter, on a CPU."""
    return "[running]" if interp.free_threaded else NATIVE


def test_native_fp_chain_under_its_python_line(interp, start_target, pybpfprof):
    """--native=fp: the kernel's frame-pointer walk through an extension
    built with -fno-omit-frame-pointer (natfp.py, pbpfp.c): fp_c under
    fp_b under fp_a, under the Python line that called chain(). The
    interpreters here have no frame pointers: past the extension the chain
    is garbage, which must not lose or misplace the Python frames."""
    _, pid, _ = start_target(interp, "natfp.py", timeout=60)
    r = pybpfprof("-p", pid, "-d", "1.5", "-F", "199", "--native=fp", "--stats=json")
    assert r.returncode == 0, r.stderr
    # The script's path as the interpreter saw it (a chroot's copy elsewhere).
    line = "outer ("
    want = [line, "[native] fp_a (", "[native] fp_b (", "[native] fp_c ("]
    called = ":%d)" % marks(NATFP)["chain"]
    total = ordered = 0
    for frames, count in parse_collapsed(r.stdout):
        if not any(f.startswith("[native] fp_c (") for f in frames):
            continue
        total += count
        at = last_positions(frames, want)
        if -1 not in at and at == sorted(at) and frames[at[0]].endswith(called) and \
                at[1:] == [len(frames) - 3, len(frames) - 2, len(frames) - 1]:
            ordered += count
    assert total >= 50, r.stdout[-3000:]
    assert ordered >= total * 0.8, (ordered, total, r.stdout[-3000:])
    stats = re.search(r'"native_stacks":\{"stacks":(\d+)', r.stderr)
    assert stats and int(stats.group(1)) >= total, r.stderr[-2000:]
    assert '"walk":"fp"' in r.stderr, r.stderr[-2000:]


def last_positions(frames, want):
    """For each prefix in want, the index of the last frame starting with
    it, -1 when none does."""
    at = []
    for w in want:
        hits = [i for i, f in enumerate(frames) if f.startswith(w)]
        at.append(hits[-1] if hits else -1)
    return at


def _machinery(stacks):
    """The call machinery frames after each stack's first Python frame."""
    found = []
    for frames, _ in stacks:
        py = [i for i, f in enumerate(frames) if not f.startswith("[")]
        if py:
            found += [f for f in frames[py[0]:] if MACHINERY.match(f)]
    return found


def _python_frame_above(frames, lib):
    """The innermost Python frame before the first frame in LIB, or None
    when no frame is in LIB."""
    first = [i for i, f in enumerate(frames) if f.startswith("[native] ") and lib in f]
    if not first:
        return None
    py = [f for f in frames[:first[0]] if not f.startswith("[")]
    return py[-1] if py else ""


def _under_line(stacks, lib, func, line):
    """(samples with a frame in LIB, those whose Python caller is FUNC at LINE)."""
    inside = right = 0
    for frames, count in stacks:
        caller = _python_frame_above(frames, lib)
        if caller is None:
            continue
        inside += count
        if caller.startswith(func + " (") and caller.endswith(":%d)" % line):
            right += count
    return inside, right


def _build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, universal_newlines=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else ""


def _check_mappings(path, lib):
    """The pprof at path has a mapping for LIB with its file's build-id,
    and each of LIB's locations an address inside it; how many there are."""
    with open(path, "rb") as f:
        prof = Profile(f.read())
    maps = {i: m for i, m in prof.mappings.items() if os.path.basename(m["file"]).startswith(lib)}
    assert maps, sorted(m["file"] for m in prof.mappings.values())
    for m in maps.values():
        assert m["build_id"] and m["build_id"] == _build_id(m["file"]), m
        assert m["start"] < m["limit"] and m["offset"] % 4096 == 0, m
    placed = [(maps[mi], addr) for mi, addr in prof.addresses.values() if mi in maps]
    assert placed and all(m["start"] <= a < m["limit"] for m, a in placed), placed[:5]
    return len(placed)


def test_libraries_under_their_python_lines(interp, start_target, pybpfprof, tmp_path):
    """natlibs.py hashes with hashlib.sha256 and compresses with zlib, and
    (Debian's python3 with python3-numpy) multiplies matrices in a thread.
    One target, two recordings: --native-leaf, libcrypto's leaf under
    digest()'s line; --native as pprof read back by convert, libcrypto's
    frames under digest()'s line and BLAS's under crunch()'s; the pprof's
    libz mapping (path, build-id, addresses), kept by convert to pprof;
    stripped libz's internal code one frame per library."""
    _, pid, ready = start_target(interp, "natlibs.py", timeout=60)
    m = marks(NATLIBS)
    # OpenSSL's libcrypto, or (3.14t, built without it) the _sha2 module's HACL* code.
    sha = "libcrypto.so" if ready["sha256"] == "_hashlib" else "_sha2."
    # 3 s: digest() has about a third of the CPU the process gets, less on a loaded machine.
    r = pybpfprof("-p", pid, "-d", "3", "-F", "199", "--status", "--native-leaf")
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(r.stdout)
    digest = [(f, c) for f, c in stacks if any(x.startswith("digest (") for x in f)]
    total = sum(c for _, c in digest)
    crypto = sum(c for f, c in digest
                 if f[-1] == native_status(interp) and sha in f[-2] and f[-3].startswith("digest (")
                 and f[-3].endswith(":%d)" % m["digest"]))
    assert total >= 30, r.stdout[-2000:]
    assert crypto >= total // 2, (crypto, total, r.stdout[-3000:])

    out = tmp_path / "natlibs.pb.gz"
    r = pybpfprof("-p", pid, "-d", "3", "-F", "199", "--native", "--stats=json", "-o", out)
    assert r.returncode == 0, r.stderr
    # A return address seen again is named from its last naming, not searched again,
    # and a walk from a frame state seen again is taken from the memo: the lines
    # checked below are what it gave.
    nat = json.loads(next(ln for ln in r.stderr.splitlines() if ln.startswith("{")))["native_stacks"]
    assert nat["frames"] >= 100 and nat["named_again"] >= nat["frames"] // 2, nat
    assert nat["walked_again"] >= 1, nat
    back = pybpfprof("convert", "-i", out)
    assert back.returncode == 0, back.stderr
    again = tmp_path / "again.pb.gz"
    r = pybpfprof("convert", "-i", out, "-o", again)
    assert r.returncode == 0, r.stderr
    assert _check_mappings(str(again), "libz.so") == _check_mappings(str(out), "libz.so")
    stacks = parse_collapsed(back.stdout)
    # Stripped libz: its internal code is one frame "[native] libz.so.1.2.13"
    # (no +0xADDR frames), a run of them one frame.
    frames = [f for fs, _ in stacks for f in fs]
    assert not [f for f in frames if "+0x" in f], back.stdout[-2000:]
    assert any(re.match(r"\[native\] libz\.so[.0-9]*$", f) for f in frames), back.stdout[-2000:]
    for fs, _ in stacks:
        assert not [a for a, b in zip(fs, fs[1:]) if a == b and " (" not in a], fs
    # compress's C function right under its Python line, no call machinery
    # between (Debian's zlib module is built into its stripped python3.11:
    # a "[native] python3.11" frame there, unnamed).
    assert not _machinery(stacks), _machinery(stacks)[:5]
    compress = [fs[i - 1] for fs, _ in stacks for i, f in enumerate(fs)
                if f.startswith("[native] zlib_compress")]
    assert interp.name == "3.11-debian-static" or compress, back.stdout[-2000:]
    assert all(f.startswith("squeeze (") and f.endswith(":%d)" % m["squeeze"]) for f in compress), \
        compress[:5]
    inside, right = _under_line(stacks, sha, "digest", m["digest"])
    assert inside >= 20 and right >= inside * 0.9, (inside, right, back.stdout[-3000:])
    if interp.name == "3.11-debian-static":
        assert ready["numpy"], "python3-numpy is not installed (make deps)"
    if ready["numpy"]:
        inside, right = _under_line(stacks, "libblas.so", "crunch", m["matmul"])
        assert inside >= 20 and right >= inside * 0.9, (inside, right, back.stdout[-3000:])


def test_sleeping_thread_native_frames_in_wall_mode(interp, start_target, pybpfprof):
    """Wall mode, --native: a thread asleep in time.sleep has, from the
    kernel's copy at its switch out, the C it sleeps in under nap()'s line
    (libc's clock_nanosleep, nanosleep or select); a sleeping thread's
    stack is kept until it runs again, so nearly every tick has them."""
    _, pid, _ = start_target(interp, "napper.py")
    line = ":%d)" % marks(os.path.join(TARGETS, "napper.py"))["nap"]
    r = pybpfprof("-p", pid, "-m", "wall", "-d", "1.5", "-F", "99", "--native")
    assert r.returncode == 0, r.stderr
    total = inside = 0
    for frames, count in parse_collapsed(r.stdout):
        py = [i for i, f in enumerate(frames) if f.startswith("nap (")]
        if not py:
            continue
        assert frames[py[-1]].endswith(line), frames
        total += count
        after = frames[py[-1] + 1:]
        # The innermost named frame: a libc without symbols for its
        # internal syscall helpers (Debian sid's) ends in a bare "libc.so.6".
        named = [f for f in after if not re.match(r"\[native\] [^ ]+\.so[.0-9]*$", f)]
        if after and all(f.startswith("[native] ") for f in after) and named and \
                re.search(r"nanosleep|select", named[-1]):
            inside += count
    assert total >= 100, r.stdout[-3000:]
    assert inside >= total * 0.8, (inside, total, r.stdout[-3000:])
