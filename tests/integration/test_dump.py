"""`pybpfprof dump` against parked targets on every interpreter: the stacks
it reads from outside must equal what the target reports of itself."""

import json
import os
import random
import re
import subprocess
import time

import pytest

from conftest import TARGETS, _discover

# Each reads what a layout gives: on every interpreter, not one of each family.
pytestmark = pytest.mark.every_version

PARKED = os.path.join(TARGETS, "parked.py")

EXIT_USAGE, EXIT_NO_PROCESS, EXIT_NOT_PYTHON, EXIT_UNSUPPORTED = 2, 3, 4, 5
EXIT_TARGET_GONE = 8


def expected_function(frame, version):
    """What dump names a frame: co_qualname on 3.11+, co_name before."""
    return frame["qualname"] if version >= (3, 11) else frame["name"]


def dump_json(pybpfprof, pid):
    r = pybpfprof("dump", "-p", pid, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def states(pid):
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            out[int(tid)] = f.read().rpartition(")")[2].split()[0]
    return out


def test_dump_matches_target(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, PARKED)
    got = dump_json(pybpfprof, pid)

    assert got["pid"] == pid
    assert got["version"] == "%d.%d.%d" % tuple(ready["version"])
    by_tid = {t["tid"]: t for t in got["threads"]}
    want = {t["native_id"]: t for t in ready["threads"]}
    assert sorted(by_tid) == sorted(want), "dump saw other threads than the target has"
    for tid, t in want.items():
        d = by_tid[tid]
        assert d["error"] is None, (t["role"], d["error"])
        # A free-threaded build has no GIL to hold: null, not false.
        assert d["on_cpu"] is False, t["role"]
        assert d["holds_gil"] is (None if interp.free_threaded else False), t["role"]
        exp = [(expected_function(f, interp.version), f["file"], f["line"]) for f in t["frames"]]
        seen = [(f["function"], f["file"], f["line"]) for f in d["frames"]]
        assert seen == exp, "thread %s (%s) differs" % (t["role"], t["name"])
    assert len(by_tid[ready["threads"][0]["native_id"]]["frames"]) >= 3


def test_dump_does_not_stop_target(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, PARKED)
    for _ in range(20):
        r = pybpfprof("dump", "-p", pid)
        assert r.returncode == 0, r.stderr
        # A stopped task would show 't' or 'T'; parked threads sleep throughout.
        assert set(states(pid).values()) == {"S"}
    assert proc.poll() is None


def test_dump_text(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, PARKED)
    r = pybpfprof("dump", "-p", pid)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Process %d: " % pid)
    assert "(Python %d.%d.%d)" % tuple(ready["version"]) in r.stdout
    script = ready["script"]
    for t in ready["threads"]:
        top = t["frames"][0]
        line = "    %s (%s:%d)" % (expected_function(top, interp.version), script, top["line"])
        assert line in r.stdout.splitlines()
        assert "Thread %d " % t["native_id"] in r.stdout


# --- errors: one line on stderr, a distinct exit code ----------------------------

def one_line_error(r, code, text):
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], r.stderr
    assert r.stdout == ""


def test_error_no_such_pid(pybpfprof):
    pid = 4194000  # above the default pid_max of small machines, never in use
    while os.path.exists("/proc/%d" % pid):
        pid += 1
    one_line_error(pybpfprof("dump", "-p", pid), EXIT_NO_PROCESS, "no such process")


def test_error_not_python(pybpfprof):
    p = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.1)
        one_line_error(pybpfprof("dump", "-p", p.pid), EXIT_NOT_PYTHON, "not a Python process")
    finally:
        p.kill()
        p.wait()


EXITS_SOON = """
import sys, time
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
"""


RENAMED = """
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, b"renamedcomm", 0, 0, 0)
print("ready", flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    pass
"""


def test_main_thread_is_mainthread(pybpfprof):
    """A main thread threading never named (not imported) is MainThread in
    dump, as in a recording's summary and thread frames, not its comm."""
    usable = [i for i in _discover() if not i.skip_reason and not i.chrooted]
    if not usable:
        pytest.skip("no interpreter")
    p = subprocess.Popen([usable[0].executable, "-c", RENAMED], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        r = pybpfprof("dump", "-p", p.pid)
        assert r.returncode == 0, r.stderr
        assert ('Thread %d "MainThread"' % p.pid) in r.stdout, r.stdout
        r = pybpfprof("dump", "-p", p.pid, "--json")
        assert [t["name"] for t in json.loads(r.stdout)["threads"]] == ["MainThread"], r.stdout
    finally:
        p.kill()
        p.wait()


def test_exiting_process_is_gone_not_unpythonic(pybpfprof, tmp_path):
    """A process dumped as it exits has, for a moment, no memory map while it
    does not look like a zombie yet: that is "process exited" (8), never
    "not a Python process" (4). Issue 14 item 13 saw 4 in 4 of 120."""
    usable = [i for i in _discover() if not i.skip_reason and not i.chrooted]
    usable.sort(key=lambda i: i.name != "3.11-debian-static")   # where it was seen
    if not usable:
        pytest.skip("no interpreter")
    script = tmp_path / "exits_soon.py"
    script.write_text(EXITS_SOON)
    rng = random.Random(14)
    codes = []
    for _ in range(60):
        p = subprocess.Popen(usable[0].cmd(str(script), "%.4f" % rng.uniform(0, 0.05)),
                             stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline() == "ready\n"
            r = pybpfprof("dump", "-p", p.pid)
        finally:
            p.kill()
            p.wait()
        codes.append(r.returncode)
        assert r.returncode in (0, EXIT_TARGET_GONE), (r.returncode, r.stderr)
        if r.returncode == EXIT_TARGET_GONE:
            assert r.stderr == "pybpfprof: pid %d: process exited\n" % p.pid
    assert EXIT_TARGET_GONE in codes, "no dump met an exiting process: the test proves nothing"


def test_error_usage(pybpfprof):
    r = pybpfprof("dump", "-p", "abc")
    assert r.returncode == EXIT_USAGE
    r = pybpfprof("dump")
    assert r.returncode == EXIT_USAGE and "-p PID is required" in r.stderr


def old_pythons():
    """CPythons older than 3.6 (pyenv's 2.7, 3.5): not supported."""
    root = os.environ.get("PYENV_ROOT", "/root/.pyenv")
    vers = os.path.join(root, "versions")
    out = []
    if os.path.isdir(vers):
        for d in sorted(os.listdir(vers)):
            m = re.match(r"^(\d+)\.(\d+)\.\d+$", d)
            if m and (int(m.group(1)), int(m.group(2))) < (3, 6):
                out.append(os.path.join(vers, d, "bin", "python%s.%s" % m.groups()))
    return [p for p in out if os.access(p, os.X_OK)]


@pytest.mark.skipif(not old_pythons(), reason="no Python older than 3.6 installed to test with")
def test_error_unsupported_version(pybpfprof):
    exe = old_pythons()[0]
    p = subprocess.Popen([exe, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.5)
        r = pybpfprof("dump", "-p", p.pid)
        m = re.search(r"python(\d+\.\d+)$", exe)
        one_line_error(r, EXIT_UNSUPPORTED, "unsupported Python version %s" % m.group(1))
        assert r.stderr.rstrip().endswith("(supported: 3.6 to 3.14)"), r.stderr
    finally:
        p.kill()
        p.wait()


# --- issue 30, item 6: a stack that changes while it is read -----------------------

@pytest.mark.families
def test_dump_of_a_changing_stack_is_whole_or_says_not(interp, start_target, pybpfprof):
    """A thread recursing and returning all the time: each dump shows a
    whole stack (down to <module>), or says that it could not read one
    ("consistent": false, or an error). Torn reads were 1 in 10 to 1 in 60
    on 3.6-3.10, printed as whole; 3.11+ read whole already, and are left
    out to save the suite's time."""
    if interp.version >= (3, 11):
        pytest.skip("3.11+ frames are not objects freed under the reader")
    proc, pid, ready = start_target(interp, os.path.join(TARGETS, "recursive.py"))
    said = dumps = 0
    # 30 dumps, and more (up to 100) until one has read a whole stack.
    while dumps < 30 or (said == dumps and dumps < 100):
        dumps += 1
        got = dump_json(pybpfprof, pid)
        (t,) = got["threads"]
        names = [f["function"] for f in t["frames"]]
        if t["consistent"] is False or t["error"] is not None:
            assert t["error"], t
            said += 1
            continue
        assert names and names[-1] == "<module>" and "main" in names, names
        assert set(names[:-2]) <= {"recurse", "randint", "randrange", "_randbelow",
                                   "_randbelow_with_getrandbits", "Random.randint",
                                   "Random.randrange", "Random._randbelow",
                                   "Random._randbelow_with_getrandbits"}, names
    # How many reads agree depends on how often the reader is preempted: on a
    # loaded machine most dumps of this target say they are not consistent
    # (25 of 30 seen under make test, and once 30 of 30 on 3.7), which is the
    # truth. One whole is owed.
    assert said < dumps, "no dump of %d read a whole stack" % dumps


# --- issue 30, item 7: 3.6's GIL, not created until a second thread starts ---------

def test_sleeper_that_started_no_thread_holds_no_gil(start_target, pybpfprof, tmp_path):
    """3.6 creates its GIL when a second thread starts: before that nobody
    holds it, and a sleeping thread is not said to (dump) nor counted
    (gil mode, the summary's GIL share). The subject is 3.6's lazy GIL."""
    interp = next((i for i in _discover() if i.name == "3.6" and not i.skip_reason), None)
    if interp is None:
        pytest.skip("no 3.6 interpreter")
    proc, pid, ready = start_target(interp, os.path.join(TARGETS, "longsleep.py"))
    time.sleep(0.2)
    (t,) = dump_json(pybpfprof, pid)["threads"]
    assert t["on_cpu"] is False and t["holds_gil"] is False, t
    r = pybpfprof("-m", "gil", "-p", pid, "-d", 1, "-F", 99, "-o", tmp_path / "gil.txt")
    assert r.returncode == 0, r.stderr
    assert re.search(r"GIL held 0\.0%", r.stderr), r.stderr
    assert "gil mode, 0 samples" in r.stderr, r.stderr
