"""Profiles around process lifetimes (issue 14, items 4, 5, 6, 9, 10, 16):
short runs profiled from the first instruction to the last, frames named
although the target exited, a target that execs, SIGHUP, the launched
command's exit status, and what becomes of the command when pybpfprof dies."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import PYBPFPROF, _discover
from profile import WORKERS, func_of, no_bpf_leftovers, parse_collapsed, total


def first_interp():
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable, "no interpreter"
    return usable[0]


def launch(args, cmd, timeout=60):
    return subprocess.run([PYBPFPROF] + [str(a) for a in args] + ["--"] + cmd,
                          capture_output=True, text=True, timeout=timeout)


def funcs(stacks):
    """{function name: samples with it anywhere on the stack}"""
    out = {}
    for frames, count in stacks:
        for f in set(map(func_of, frames)):
            out[f] = out.get(f, 0) + count
    return out


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def gone(pid, seconds):
    """pid exited (or is a zombie) within seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


# --- item 9: SIGHUP is SIGTERM -------------------------------------------------

def test_sighup_writes_the_profile(start_target, tmp_path):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    out = tmp_path / "out.txt"
    p = subprocess.Popen([PYBPFPROF, "-p", str(pid), "-F", "199", "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert p.poll() is None, p.stderr.read()
    p.send_signal(signal.SIGHUP)
    stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 0, stderr
    assert total(parse_collapsed(out.read_text())) > 30
    assert no_bpf_leftovers()
    assert proc.poll() is None, "the target must not be touched"


# --- item 10: the launched command's exit status --------------------------------

@pytest.mark.parametrize("code,want,said", [
    ("import sys; sys.exit(3)", 3, "exited with status 3"),
    ("pass", 0, "exited with status 0"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9,
     "was killed by signal 9"),
], ids=["exit3", "exit0", "sigkill"])
def test_command_exit_status(tmp_path, code, want, said):
    interp = first_interp()
    out = tmp_path / "out.txt"
    r = launch(["-o", out], interp.argv + ["-c", code])
    assert r.returncode == want, r.stderr
    assert said in r.stderr, r.stderr
    assert out.exists()


def test_command_status_not_when_profiling_failed(tmp_path):
    """pybpfprof's own error wins over the command's status."""
    interp = first_interp()
    r = launch(["-o", "/nonexistent/dir/out.txt"], interp.argv + ["-c", "import sys; sys.exit(3)"])
    assert r.returncode == 10, r.stderr


# --- item 16: the command dies with the profiler ----------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_command_stops_with_the_profiler(tmp_path, sig):
    interp = first_interp()
    p = subprocess.Popen([PYBPFPROF, "-o", str(tmp_path / "out.txt"), "--"] + interp.argv +
                         ["-c", "import time; time.sleep(60)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = None
    deadline = time.monotonic() + 20
    while child is None and time.monotonic() < deadline:
        kids = children(p.pid)
        child = kids[0] if kids else None
        time.sleep(0.05)
    assert child, "no command started"
    time.sleep(1)
    try:
        p.send_signal(sig)
        p.communicate(timeout=30)
        assert gone(child, 10), "the command outlived pybpfprof"
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass
