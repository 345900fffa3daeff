"""Helpers shared by the tests that record profiles."""

import json
import os
import re
import subprocess
import time

from conftest import PYBPFPROF, TARGETS

WORKERS = os.path.join(TARGETS, "workers.py")
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def parse_collapsed(text):
    """[(frames root first, count)]"""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        out.append((stack.split(";"), int(count)))
    return out


def func_of(frame):
    m = FRAME.match(frame)
    return m.group("func") if m else frame


def by_thread(stacks):
    """{tid: [(frames without the thread root, count)]} for profiles taken with -t."""
    out = {}
    for frames, count in stacks:
        assert frames[0].startswith("thread "), frames[0]
        tid = int(frames[0].split()[1])
        out.setdefault(tid, []).append((frames[1:], count))
    return out


def total(stacks):
    return sum(c for _, c in stacks)


def marks(path=WORKERS):
    """{mark: line number} of the '# mark: NAME' comments of a target."""
    with open(path) as f:
        return {m.group(1): n for n, t in enumerate(f, 1)
                for m in [re.search(r"#\s*mark:\s*([\w-]+)", t)] if m}


def bpf_programs_of_dead(names=("on_sample", "on_switch")):
    """BPF programs of ours held by no living process: must always be empty."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    left = []
    for prog in json.loads(r.stdout or "[]"):
        if prog.get("name") not in names:
            continue
        pids = [p["pid"] for p in prog.get("pids", [])]
        if not any(os.path.exists("/proc/%d" % pid) for pid in pids):
            left.append(prog)
    return left


def run_profile(*args, timeout=120):
    """Run pybpfprof to completion; (CompletedProcess, collapsed stacks)."""
    r = subprocess.run([PYBPFPROF] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    return r


def task_cpu_ns(pid, tid):
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        return int(f.read().split()[0])


def wait_for(path, timeout=10):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "%s never appeared" % path
        time.sleep(0.05)


def no_bpf_leftovers(timeout=3.0):
    """True once no program of ours is held by no living process. The kernel
    frees a dead process's programs asynchronously, and other pybpfprof runs
    (other tests) may be exiting at the same moment: poll briefly."""
    deadline = time.monotonic() + timeout
    while bpf_programs_of_dead():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
