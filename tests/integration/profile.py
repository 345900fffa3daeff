"""Helpers shared by the tests that record profiles."""

import json
import os
import re
import subprocess
import time

from conftest import PYBPFPROF, REPO, TARGETS

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


BPF_SOURCE = os.path.join(REPO, "bpf", "profile.bpf.c")
BPF_NAME_LEN = 15   # the kernel keeps at most 15 characters of a program's or map's name


def bpf_names():
    """(program names, map names) of bpf/profile.bpf.c, cut as the kernel cuts them."""
    with open(os.path.normpath(BPF_SOURCE)) as f:
        src = f.read()
    progs = re.findall(r'SEC\("[^"]*"\)\s*\n\s*int\s+(?:BPF_PROG\()?\s*(\w+)', src)
    progs = [p for p in progs if p != "LICENSE"]
    maps = re.findall(r'\}\s*(\w+)\s+SEC\("\.maps"\)', src)
    return ({p[:BPF_NAME_LEN] for p in progs}, {m[:BPF_NAME_LEN] for m in maps})


def _bpftool(what):
    r = subprocess.run(["bpftool", "-j", what, "show"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout or "[]")


def _bpf_fd_holders():
    """{("prog"|"map"|"link", id): {pid, ...}} of every BPF fd of every living
    process, from /proc/PID/fdinfo (bpftool here cannot tell who holds what)."""
    held = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        base = "/proc/%s/fdinfo" % pid
        try:
            fds = os.listdir(base)
        except OSError:
            continue
        for fd in fds:
            try:
                with open(os.path.join(base, fd)) as f:
                    info = f.read()
            except OSError:
                continue
            # A link's fdinfo names its program too: the link is what is held.
            kind = "link" if "link_id:" in info else "prog" if "prog_id:" in info else \
                "map" if "map_id:" in info else None
            if kind:
                oid = int(re.search(r"%s_id:\s*(\d+)" % kind, info).group(1))
                held.setdefault((kind, oid), set()).add(int(pid))
    return held


_BUILDS = {}     # (st_dev, st_ino, st_mtime_ns) of an executable -> whether it is a pybpfprof


def _is_pybpfprof(pid):
    """A pybpfprof, under whatever name (a build copied aside for a
    comparison runs under its copy's): its executable says so."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if b"pybpfprof" in f.read():
                return True
        st = os.stat("/proc/%d/exe" % pid)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns)
        if key not in _BUILDS:
            with open("/proc/%d/exe" % pid, "rb") as f:
                _BUILDS[key] = b"pybpfprof: " in f.read()
        return _BUILDS[key]
    except OSError:
        return False


def bpf_objects_of_dead(names=None):
    """pybpfprof's BPF programs, maps and links that outlived their pybpfprof:
    every one not held, directly or through a link (which holds its program)
    or a program (which holds its maps), by a living pybpfprof process. Must
    always be empty once the pybpfprof runs are over. Objects of pybpfprof
    runs still going (other tests') are held, so they do not count.
    Each is bpftool's JSON with "kind" added."""
    prog_names, map_names = bpf_names()
    if names:
        prog_names = {n[:BPF_NAME_LEN] for n in names}
    # The objects first, then who holds them: an object a run loads in
    # between would otherwise be listed with no holder seen, as if left.
    progs = {p["id"]: p for p in _bpftool("prog") if p.get("name") in prog_names}
    links = [l for l in _bpftool("link") if l.get("prog_id") in progs]
    maps = [m for m in _bpftool("map") if m.get("name") in map_names]
    held = _bpf_fd_holders()
    alive = {k for k, pids in held.items() if any(_is_pybpfprof(p) for p in pids)}
    for l in links:
        if ("link", l["id"]) in alive:
            alive.add(("prog", l["prog_id"]))
    for pid, prog in progs.items():
        if ("prog", pid) in alive:
            alive.update(("map", m) for m in prog.get("map_ids", []))
    left = []
    for kind, objs in (("prog", progs.values()), ("link", links), ("map", maps)):
        for o in objs:
            if (kind, o["id"]) not in alive:
                left.append(dict(o, kind=kind))
    return left


def bpf_programs_of_dead(names=None):
    """Kept for the tests that call it: every kind of object now (see above)."""
    return bpf_objects_of_dead(names)


def wait_no_bpf_objects(timeout=5):
    """The kernel frees objects once their last holder is gone, a little later:
    the leftovers after waiting up to timeout seconds for that."""
    deadline = time.monotonic() + timeout
    left = bpf_objects_of_dead()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = bpf_objects_of_dead()
    return left


def task_cpu_ns(pid, tid):
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        return int(f.read().split()[0])


def ready_side_path(interp, ready, suffix):
    """A file a target writes beside its ready file (which the harness placed
    in a per-target directory), as the host sees it: found through /proc."""
    with open("/proc/%d/environ" % ready["pid"], "rb") as f:
        env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    return interp.host_path(env[b"PBP_READY"].decode() + suffix)


def wait_for(path, timeout=10):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "%s never appeared" % path
        time.sleep(0.05)


def no_bpf_leftovers(timeout=10.0):
    """True once no program of ours is held by no living process. The kernel
    frees a dead process's programs asynchronously, and other pybpfprof runs
    (other tests) may be exiting at the same moment: poll briefly."""
    deadline = time.monotonic() + timeout
    while bpf_programs_of_dead():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def process_cpu(pid):
    """The CPU seconds a process has spent, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        utime, stime = f.read().rpartition(")")[2].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


def perf_events_open(pid):
    """True once process pid holds a perf event (pybpfprof samples with them)."""
    fds = "/proc/%d/fd" % pid
    for fd in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)) == "anon_inode:[perf_event]":
                return True
        except OSError:
            pass
    return False


def wait_sampling(p, pid, cpu=0.5, timeout=60):
    """Until the profiler p samples (its perf events are open) and the
    target pid has then spent `cpu` seconds on a CPU: about 100 samples at
    199 Hz, however loaded the machine and however long the set-up takes
    (a fixed wait gave 6 under load, and none under ASan)."""
    deadline = time.monotonic() + timeout
    while not perf_events_open(p.pid):
        assert p.poll() is None, p.stderr.read()
        assert time.monotonic() < deadline, "pybpfprof did not start sampling in %d s" % timeout
        time.sleep(0.05)
    start = process_cpu(pid)
    while process_cpu(pid) - start < cpu:
        assert time.monotonic() < deadline, "the target got %.2f s of CPU in %d s" % (
            process_cpu(pid) - start, timeout)
        time.sleep(0.05)
    assert p.poll() is None, p.stderr.read()
