"""Running pybpfprof and reading its end-of-run figures (--stats=json)."""

import json
import os
import subprocess
import threading
import time

from common import PBP
from kernel import grab_sample_prog, online_cpus, perf_links, prog_stats, task_cpu_ns, vm_hwm_kb
from targets import pdeathsig


def parse_stats(text):
    """The --stats=json object of a run's stderr (docs/usage.md: End-of-run figures
    as JSON); {} when there is none. Warnings are lines of their own."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


def proc_sum(s, key):
    """A per-process figure summed over the processes profiled at the end."""
    procs = s.get("processes")
    return sum(p[key] for p in procs) if procs else None


class Run(object):
    pass


def run_pbp(args, out, window=None, grab=False, ref=None, timeout=600, window_ref=None):
    """Run pybpfprof to its end. window=(a, b): the profiler's CPU per second
    between a and b seconds after its start, and its VmHWM at b. ref: a
    process whose CPU time to measure (r.ref_cpu, s) from the moment the
    sampler is attached on every CPU until pybpfprof exits. window_ref: a
    process whose CPU per second to measure over the window too."""
    errpath = out + ".err"
    with open(errpath, "w") as err:
        p = subprocess.Popen([PBP, "--stats=json", "-o", out] + [str(a) for a in args],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                             preexec_fn=pdeathsig)
    t0 = time.monotonic()
    r = Run()
    r.prog_fd = grab_sample_prog(p.pid) if grab else None
    r.window_cpu = r.hwm_kb = r.ref_cpu = r.window_ref_cpu = None
    if ref:
        ncpu, deadline = len(online_cpus()), time.monotonic() + 30
        while 0 <= perf_links(p.pid) < ncpu and time.monotonic() < deadline:
            time.sleep(0.002)
        ref0 = task_cpu_ns(ref)
    if window:
        a, b = window
        time.sleep(max(0.0, t0 + a - time.monotonic()))
        c0, ta = task_cpu_ns(p.pid), time.monotonic()
        w0 = task_cpu_ns(window_ref) if window_ref else None
        time.sleep(max(0.0, t0 + b - time.monotonic()))
        c1, tb = task_cpu_ns(p.pid), time.monotonic()
        w1 = task_cpu_ns(window_ref) if window_ref else None
        r.hwm_kb = vm_hwm_kb(p.pid)
        if c0 is not None and c1 is not None:
            r.window_cpu = (c1 - c0) / 1e9 / (tb - ta)
        if w0 is not None and w1 is not None:
            r.window_ref_cpu = (w1 - w0) / 1e9 / (tb - ta)
    killer = threading.Timer(timeout, p.kill)
    killer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        killer.cancel()
    if ref and ref0 is not None:
        ref1 = task_cpu_ns(ref)
        r.ref_cpu = (ref1 - ref0) / 1e9 if ref1 is not None else None
    p.returncode = os.waitstatus_to_exitcode(status)
    r.rc = p.returncode
    r.cpu = ru.ru_utime + ru.ru_stime
    with open(errpath) as f:
        r.stderr = f.read()
    r.s = parse_stats(r.stderr)
    r.bpf = None
    if r.prog_fd is not None:
        r.bpf = prog_stats(r.prog_fd)
        os.close(r.prog_fd)
    if r.rc != 0:
        raise RuntimeError("pybpfprof %s exited %d:\n%s" % (" ".join(map(str, args)), r.rc,
                                                             r.stderr[-2000:]))
    return r

