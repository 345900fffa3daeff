"""Smoke tests of the harness itself (conftest.py and targets/parked.py),
on every interpreter, before any profiling is involved."""

import os
import re
import time

import pytest

from conftest import TARGETS

# Each reads what a layout gives: on every interpreter, not one of each family.
pytestmark = pytest.mark.every_version

PARKED = os.path.join(TARGETS, "parked.py")
PARK_MARK = re.compile(r"^\s*[^#\s].*#\s*park:\s*([\w-]+)\s*$")

EXPECTED = {
    # role: (thread name, innermost co_name, innermost co_qualname on 3.11+)
    "main": ("MainThread", "park_main", "park_main"),
    "recurse": ("pbp-recurse", "recurse", "recurse"),
    "method": ("pbp-method", "run_inner", "Worker.run_inner"),
    "generator": ("pbp-generator", "gen_body", "gen_body"),
    "lambda": ("pbp-lambda", "<lambda>", "lambda_entry.<locals>.<lambda>"),
    "closure": ("pbp-closure", "inner", "make_closure.<locals>.inner"),
}
# Frames between the innermost one and threading's (outermost first is last).
CALLERS = {
    "main": ["main", "<module>"],
    "method": ["run_outer", "method_entry"],
    "generator": ["generator_entry"],
    "lambda": ["lambda_entry"],
    "closure": ["closure_entry"],
}

_started = []  # (pid, start time) of every target, checked after teardown


def park_lines():
    with open(PARKED) as f:
        return {m.group(1): n for n, m in
                ((n, PARK_MARK.match(t)) for n, t in enumerate(f, 1)) if m}


def proc_starttime(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[19]
    except OSError:
        return None


def task_states(pid):
    states = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            fields = f.read().rpartition(")")[2].split()
        states[int(tid)] = (fields[0], int(fields[11]) + int(fields[12]))
    return states


def test_interpreter_runs(interp):
    r = interp.run("-c", "import sys; print(sys.version_info[:3])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tuple(interp.version))
    assert interp.version[:2] >= (3, 6)
    assert os.path.isfile(interp.host_executable)
    if interp.free_threaded:
        # "3.14t-sid-chroot" runs the build tree's interpreter, without a GIL.
        assert interp.argv == ["chroot", interp.root, "/opt/python3.14t/src/python"]
        r = interp.run("-c", "import sys; print(sys._is_gil_enabled())")
        assert r.stdout.strip() == "False", r.stderr
        assert os.path.ismount(os.path.join(interp.root, "proc"))
    elif interp.name.endswith("-sid-chroot"):
        # "3.14-sid-chroot" runs python3.14, "3.13-dbg-sid-chroot" python3.13d
        want = interp.name[:-len("-sid-chroot")].replace("-dbg", "d")
        assert "%d.%d" % interp.version[:2] == want.rstrip("d")
        assert interp.argv == ["chroot", interp.root, "/usr/bin/python" + want]
        assert os.path.ismount(os.path.join(interp.root, "proc"))


def test_parked_stacks(interp, start_target):
    proc, pid, ready = start_target(interp, PARKED)
    _started.append((pid, proc_starttime(pid)))
    lines = park_lines()
    script = interp.place(PARKED) if not interp.chrooted else ready["script"]

    assert ready["pid"] == pid == proc.pid
    assert tuple(ready["version"]) == interp.version
    assert ready["script"] == script
    if interp.chrooted:
        assert script.startswith("/tmp/pbp-tests/")
        assert os.path.isfile(interp.host_path(script))

    threads = {t["role"]: t for t in ready["threads"]}
    assert sorted(threads) == sorted(EXPECTED)
    names = [t["name"] for t in ready["threads"]]
    assert len(set(names)) == len(names)
    assert len(set(t["native_id"] for t in ready["threads"])) == len(names)
    assert threads["main"]["native_id"] == pid
    assert ready["reporter"]["native_id"] not in [t["native_id"] for t in ready["threads"]]

    for role, (name, co_name, qualname) in EXPECTED.items():
        t = threads[role]
        frames = t["frames"]
        assert t["name"] == name
        top = frames[0]
        assert (top["name"], top["file"], top["line"]) == (co_name, script, lines[role]), role
        assert top["qualname"] == (qualname if interp.version >= (3, 11) else None)
        assert all(f["file"] and f["line"] > 0 for f in frames)
        if role == "main":
            assert [f["name"] for f in frames] == ["park_main", "main", "<module>"]
        else:
            # Python frames of threading.Thread come last: run, _bootstrap_inner, _bootstrap.
            assert [f["name"] for f in frames[-3:]] == ["run", "_bootstrap_inner", "_bootstrap"]
            assert all(f["file"].endswith("threading.py") for f in frames[-3:])
        if role in CALLERS:
            assert [f["name"] for f in frames[1:1 + len(CALLERS[role])]] == CALLERS[role]

    rec = threads["recurse"]["frames"]
    assert [f["name"] for f in rec[:300]] == ["recurse"] * 300
    assert rec[300]["name"] == "recursion_entry"
    assert all(f["line"] == lines["recurse-caller"] for f in rec[1:300])
    assert len(rec) == 304

    # Exactly the reported threads remain, and all of them sleep and stay
    # asleep: no Python code runs in the parked process.
    before = task_states(pid)
    assert sorted(before) == sorted(t["native_id"] for t in ready["threads"])
    time.sleep(0.3)
    after = task_states(pid)
    assert sorted(after) == sorted(before)
    for tid, (state, cpu) in after.items():
        assert state == "S", (tid, state)
        assert cpu == before[tid][1], "thread %d used CPU while parked" % tid
    assert proc.poll() is None


def test_targets_gone_after_teardown():
    """Runs after the parametrized tests above: their targets must be dead
    and reaped (no zombie, no process left behind)."""
    assert _started, "no target was started"
    for pid, start in _started:
        now = proc_starttime(pid)
        assert now is None or now != start, "target %d still exists" % pid


def test_stop_all_kills_and_reaps(start_target):
    """stop_all(), which the fixture's teardown runs even when the test
    fails, leaves no process behind."""
    from conftest import _discover
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable
    proc, pid, ready = start_target(usable[0], PARKED)
    start_target.stop_all()
    assert proc.returncode is not None
    assert not os.path.exists("/proc/%d" % pid) or proc_starttime(pid) is None
