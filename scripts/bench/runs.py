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


def start_pbp(args, out, grab=False, ref=None, binary=None):
    """Start pybpfprof (binary, else PBP) on args; finish_pbp waits for it.
    grab: keep an fd on its sampler program, for the kernel's run statistics.
    ref: a process whose CPU time to measure (r.ref_cpu, s) from the moment
    the sampler is attached on every CPU until pybpfprof exits."""
    r = Run()
    r.args = [str(a) for a in args]
    r.errpath = out + ".err"
    with open(r.errpath, "w") as err:
        r.p = subprocess.Popen([binary or PBP, "--stats=json", "-o", out] + r.args,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                               preexec_fn=pdeathsig)
    r.t0 = time.monotonic()
    r.prog_fd = grab_sample_prog(r.p.pid) if grab else None
    r.window_cpu = r.hwm_kb = r.ref_cpu = r.window_ref_cpu = None
    r.ref, r.ref0 = ref, None
    if ref:
        ncpu, deadline = len(online_cpus()), time.monotonic() + 30
        while 0 <= perf_links(r.p.pid) < ncpu and time.monotonic() < deadline:
            time.sleep(0.002)
        r.ref0 = task_cpu_ns(ref)
    return r


def finish_pbp(r, timeout=600):
    """Wait for a start_pbp run to end; its figures. Raises if it failed."""
    p = r.p
    killer = threading.Timer(max(1.0, r.t0 + timeout - time.monotonic()), p.kill)
    killer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        killer.cancel()
    if r.ref and r.ref0 is not None:
        ref1 = task_cpu_ns(r.ref)
        r.ref_cpu = (ref1 - r.ref0) / 1e9 if ref1 is not None else None
    p.returncode = os.waitstatus_to_exitcode(status)
    r.rc = p.returncode
    r.cpu = ru.ru_utime + ru.ru_stime
    with open(r.errpath) as f:
        r.stderr = f.read()
    r.s = parse_stats(r.stderr)
    r.bpf = None
    if r.prog_fd is not None:
        r.bpf = prog_stats(r.prog_fd)
        os.close(r.prog_fd)
    if r.rc != 0:
        raise RuntimeError("pybpfprof %s exited %d:\n%s" % (" ".join(r.args), r.rc, r.stderr[-2000:]))
    return r


def run_pbp(args, out, window=None, grab=False, ref=None, timeout=600, window_ref=None):
    """Run pybpfprof to its end. window=(a, b): the profiler's CPU per second
    between a and b seconds after its start, and its VmHWM at b. ref: as
    start_pbp's. window_ref: a process whose CPU per second to measure over
    the window too."""
    r = start_pbp(args, out, grab=grab, ref=ref)
    if window:
        a, b = window
        time.sleep(max(0.0, r.t0 + a - time.monotonic()))
        c0, ta = task_cpu_ns(r.p.pid), time.monotonic()
        w0 = task_cpu_ns(window_ref) if window_ref else None
        time.sleep(max(0.0, r.t0 + b - time.monotonic()))
        c1, tb = task_cpu_ns(r.p.pid), time.monotonic()
        w1 = task_cpu_ns(window_ref) if window_ref else None
        r.hwm_kb = vm_hwm_kb(r.p.pid)
        if c0 is not None and c1 is not None:
            r.window_cpu = (c1 - c0) / 1e9 / (tb - ta)
        if w0 is not None and w1 is not None:
            r.window_ref_cpu = (w1 - w0) / 1e9 / (tb - ta)
    return finish_pbp(r, timeout)
