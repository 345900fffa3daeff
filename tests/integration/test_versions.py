"""A CPython newer than any pybpfprof knows (issue 20): a live 3.13+ whose
_Py_DebugOffsets is made to say 3.15 (targets/bumped.py). With 3.14's layout
and every frame decoding it is read, with one warning line; otherwise it is
an unsupported version (exit 5), never read wrongly. The same way, a table
that says free-threaded is refused, and the message says so."""

import json
import os

import pytest

from conftest import TARGETS

# Each reads what a layout gives: on every interpreter, not one of each family.
pytestmark = pytest.mark.every_version

BUMPED = os.path.join(TARGETS, "bumped.py")
EXIT_UNSUPPORTED = 5
EXIT_FREE_THREADED = 14
NEWEST = (3, 14)


def assert_refused_free_threaded(r, pid, version):
    """A free-threaded build newer than 3.14t is never read with 3.14t's layout."""
    assert r.returncode == EXIT_FREE_THREADED, r.stderr
    assert r.stderr == ("pybpfprof: pid %d: free-threaded build %st is not supported (free-threaded: "
                        "3.14t whose _Py_DebugOffsets is complete; with the GIL: 3.6 to 3.14)\n"
                        % (pid, version)), r.stderr
    assert r.stdout == ""


@pytest.fixture
def debug_offsets(interp):
    if interp.version[:2] < (3, 13):
        pytest.skip("%s has no _Py_DebugOffsets" % interp.name)
    return interp


def test_newer_version_read_with_one_warning(debug_offsets, start_target, pybpfprof, tmp_path):
    proc, pid, ready = start_target(debug_offsets, BUMPED, "as_is")
    r = pybpfprof("dump", "-p", pid, "--json")
    if debug_offsets.free_threaded:
        return assert_refused_free_threaded(r, pid, "3.15.%d" % ready["version"][2])
    if tuple(ready["version"][:2]) != NEWEST:
        # 3.13's table is not laid out as 3.14's: refused, with the version it claims.
        assert r.returncode == EXIT_UNSUPPORTED, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "unsupported Python version 3.15." in lines[0], r.stderr
        return
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "warning:" in lines[0] and "newer than any" in lines[0], r.stderr
    got = json.loads(r.stdout)
    assert got["version"].startswith("3.15.")
    park = ready["parked"]
    (t,) = [t for t in got["threads"] if t["tid"] == park["native_id"]]
    top = t["frames"][0]
    assert (top["function"], top["line"]) == ("parked", park["line"]), t
    assert top["file"].endswith("bumped.py")
    # A recorded profile works the same way, with the same single warning.
    out = tmp_path / "p.txt"
    r = pybpfprof("-p", pid, "-m", "wall", "-d", "1", "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("newer than any") == 1, r.stderr
    assert "parked (%s:%d)" % (park["file"], park["line"]) in out.read_text()


def test_newer_version_that_does_not_decode_is_refused(debug_offsets, start_target, pybpfprof):
    proc, pid, ready = start_target(debug_offsets, BUMPED, "swapped")
    r = pybpfprof("dump", "-p", pid)
    if debug_offsets.free_threaded:
        return assert_refused_free_threaded(r, pid, "3.15.%d" % ready["version"][2])
    assert r.returncode == EXIT_UNSUPPORTED, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsupported Python version 3.15." in lines[0], r.stderr
    assert r.stdout == ""


def test_free_threaded_refused_by_name(debug_offsets, start_target, pybpfprof):
    """Its own exit code and a line that does not contradict itself (3.14 is
    in the range: its build is not)."""
    proc, pid, ready = start_target(debug_offsets, BUMPED, "free_threaded")
    r = pybpfprof("dump", "-p", pid)
    if debug_offsets.free_threaded:   # it was one already: read, its parked thread exact
        assert r.returncode == 0 and r.stderr == "", r.stderr
        park = ready["parked"]
        assert "parked (%s:%d)" % (park["file"], park["line"]) in r.stdout, r.stdout
        return
    assert r.returncode == EXIT_FREE_THREADED, r.stderr
    want = ("pybpfprof: pid %d: free-threaded build %st is not supported (free-threaded: 3.14t whose "
            "_Py_DebugOffsets is complete; with the GIL: 3.6 to 3.14)\n"
            % (pid, ".".join(map(str, ready["version"]))))
    assert r.stderr == want
