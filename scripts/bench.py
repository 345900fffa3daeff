#!/usr/bin/env python3
"""What pybpfprof costs, measured: `make bench` (root).

    scripts/bench.py [--quick] [--only S[,S...]] [--pythons P[,P...]]
                     [--results FILE] [--reps N]

Scenarios (--only takes their names):
  slowdown  a fixed pure-Python workload (recursion ~30 deep) timed by the
            target itself, unprofiled and profiled in cpu mode at 99, 999 and
            9,999 Hz (launch mode: the sampler is attached before the workload
            starts); and, as a floor, with bare perf timers at 999 and 9,999 Hz
            and no BPF program (what any timer-driven sampler pays here)
  cost      profiler CPU per sample (-p, a target held 30 frames deep): the
            profiler's CPU per second after start-up (schedstat), fixed costs
            included, over the samples per second;
            the BPF program's own time per sample (kernel.bpf_stats_enabled),
            which the target pays; and the achieved rate: samples delivered /
            (the target's CPU time from schedstat while the sampler was
            attached x F)
  reads     remote reads per sample in steady state (from the cost runs'
            --stats: the difference between the 9,999 and 999 Hz runs, whose
            start-up and code-object loads are the same), page and
            code-object cache hit rates
  wall      -m wall -F 99 with 0, 50 and 200 idle threads beside one busy
            one: profiler CPU per second after start-up (schedstat of the
            profiler between two instants), and 200-idle / 0-idle; and 20
            threads 30 deep waking 50 times a second: profiler CPU, the
            share of tick stacks read from the target, and the target's own
            CPU profiled / unprofiled (the kernel's switch-out copies run in
            it)
  host      50 Python processes (2 busy, 48 sleep loops) with -a -F 19,
            narrowed to them with --comm (or a -p list of the 50 pids where
            -a is missing): profiler CPU share of one core after start-up, and
            its VmHWM
  deep      recursion 500 deep at 999 Hz: profiler CPU per sample, BPF time
            per sample, and the share of stacks finished in user space
  rate      -F 10,000, 20,000 and 50,000 on a busy target: the rate pybpfprof
            ran at (it lowers -F to what the host sustains), the interrupts
            achieved per busy CPU second, samples per second of the target's
            CPU time, and the share of each CPU the BPF program took (--stats)

Every figure is a ratio or count measured in one run of this script. Cases are
interleaved (each repetition runs every case once, in an order rotated from
one repetition to the next) and reported as the median over the repetitions,
with the spread (min-max). Results go to bench/RESULTS.md; a section of it
between the "analysis" markers is written by hand and kept across runs.

BENCH_QUICK=1 (or --quick): fewer repetitions, shorter runs; a smoke test.
PBP_BIN=path measures another pybpfprof binary (before/after comparisons).
Python 3 standard library only; run as root (BPF, chroot, bpf_stats).
"""

import argparse
import ctypes
import glob
import json
import os
import platform
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PBP = os.environ.get("PBP_BIN") or os.path.join(REPO, "build", "pybpfprof")
DEFAULT_RESULTS = os.path.join(REPO, "bench", "RESULTS.md")
PYENV = os.environ.get("PYENV_ROOT") or "/root/.pyenv"
CHROOT = os.environ.get("PBP_CHROOT", "/var/cache/pybpfprof/sid-chroot").rstrip("/")
SCENARIOS = ["slowdown", "cost", "reads", "wall", "host", "deep", "rate"]
ANALYSIS_BEGIN = "<!-- analysis: begin (hand-written, kept across runs) -->"
ANALYSIS_END = "<!-- analysis: end -->"

# Run lengths and repetitions: full, and BENCH_QUICK.
# run_s: 5 s spans two of the sampler's +u/-u rate-jitter pairs (one draw a second
# after the first): the achieved rate over it is not biased by the jitter.
# low_run_s: the 99 Hz cost runs and their idle baseline; at 99 Hz a 5 s run
# holds too few samples to tell a few µs per sample from the noise here.
FULL = dict(reps=5, slow_reps=9, deep_reps=5, work_s=2.0, run_s=5.0, low_run_s=15.0,
            warm_s=1.0, host_run_s=6.0, host_warm_s=2.5, host_procs=50)
QUICK = dict(reps=2, slow_reps=2, deep_reps=2, work_s=0.4, run_s=1.2, low_run_s=1.2,
             warm_s=0.5, host_run_s=2.5, host_warm_s=1.2, host_procs=50)

RATES = [99, 999, 9999]
HIGH_RATES = [10000, 20000, 50000]
TIMER_RATES = [999, 9999]
DEPTH = 30
DEEP = 500
WALL_IDLE = [0, 50, 200]
WAKERS = 20
HOST_COMM = "pbpbench"
CHUNKS = 100           # the timed workload is timed in this many pieces too
FAST_MODE = 1.25       # a piece this much slower than a case's 5th percentile is "slow mode"
GUARD_S = 0.3          # launch mode: the target sleeps this long before its workload

# Targets: value and comparison, per figure key.
TARGETS = {
    "slowdown@99": ("<=", 1.005),
    "slowdown@999": ("<=", 1.03),
    "achieved@99": (">=", 0.99),
    "achieved@999": (">=", 0.99),
    "achieved@9999": (">=", 0.99),
    "cost_us@99": ("<=", 5.0),
    "cost_us@999": ("<=", 5.0),
    "cost_us@9999": ("<=", 5.0),
    "reads_steady": ("<=", 1.0),
    "wall_ratio": ("<=", 2.0),
    "host_core_pct": ("<", 1.0),
    "host_hwm_mb": ("<", 100.0),
}

# The target side: one script, several behaviours. Python 3.8+.
TARGET_PY = r'''
import json, os, sys, threading, time

LEAF = 200


def leaf():
    x = 0
    for i in range(LEAF):
        x += i * i
    return x


def rec(n):
    if n <= 0:
        return leaf()
    return rec(n - 1) + 1


def work_main(depth, iters):
    s = 0
    for _ in range(iters):
        s += rec(depth)
    return s


def spin_main(depth):
    while True:
        rec(depth)


def hold(n):
    """Recurse n deep, then stay there: every sample sees the whole depth."""
    if n <= 0:
        while True:
            leaf()
    return hold(n - 1) + 1


def wake_main(depth):
    """depth frames down, sleeps 10 ms and 30 ms by turns: 50 wakeups a second."""
    if depth > 1:
        return wake_main(depth - 1)
    while True:
        time.sleep(0.01)
        leaf()
        time.sleep(0.03)
        leaf()


def idle_wait(ev):
    ev.wait()


def schedstat():
    """(ns on CPU, ns waiting for a CPU) of this thread."""
    with open("/proc/self/task/%d/schedstat" % threading.get_native_id()) as f:
        v = f.read().split()
    return int(v[0]), int(v[1])


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.rename(path + ".tmp", path)


def ready(path, **kw):
    kw.update(pid=os.getpid(), native_id=threading.get_native_id(),
              version=sys.version.split()[0])
    write_json(path, kw)


def main():
    sys.setrecursionlimit(10000)
    if os.environ.get("PBP_BENCH_COMM"):    # so that -a --comm can pick the bench's processes
        import ctypes
        ctypes.CDLL(None).prctl(15, os.environ["PBP_BENCH_COMM"].encode(), 0, 0, 0)  # PR_SET_NAME
    what = sys.argv[1]
    if what == "timed":                     # timed DEPTH ITERS RESULT GUARD_S CHUNKS
        depth, iters, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        guard, nchunks = float(sys.argv[5]), int(sys.argv[6])
        per, done, chunks = max(1, iters // nchunks), 0, []
        time.sleep(guard)
        c0, t0 = schedstat(), time.perf_counter()
        while done < iters:                 # the same work, timed in chunks
            n = min(per, iters - done)
            s0, w0 = schedstat(), time.perf_counter()
            work_main(depth, n)
            w1, s1 = time.perf_counter(), schedstat()
            chunks.append((w1 - w0) - (s1[1] - s0[1]) / 1e9)
            done += n
        t1, c1 = time.perf_counter(), schedstat()
        write_json(out, {"wall": t1 - t0, "cpu": (c1[0] - c0[0]) / 1e9,
                         "delay": (c1[1] - c0[1]) / 1e9, "chunks": chunks,
                         "version": sys.version.split()[0]})
    elif what == "spin":                    # spin DEPTH READY
        ready(sys.argv[3])
        spin_main(int(sys.argv[2]))
    elif what == "hold":                    # hold DEPTH READY
        ready(sys.argv[3])
        hold(int(sys.argv[2]))
    elif what == "idle":                    # idle READY
        ready(sys.argv[2])
        while True:
            time.sleep(3600)
    elif what == "sleeploop":               # sleeploop READY
        ready(sys.argv[2])
        while True:
            time.sleep(0.1)
    elif what == "wakers":                  # wakers N DEPTH READY
        n, depth = int(sys.argv[2]), int(sys.argv[3])
        for _ in range(n):
            threading.Thread(target=wake_main, args=(depth,), daemon=True).start()
        ready(sys.argv[4], threads=threading.active_count())
        while True:
            time.sleep(3600)
    elif what == "threads":                 # threads N DEPTH READY
        n, depth = int(sys.argv[2]), int(sys.argv[3])
        ev = threading.Event()
        for _ in range(n):
            threading.Thread(target=idle_wait, args=(ev,), daemon=True).start()
        ready(sys.argv[4], threads=threading.active_count())
        spin_main(depth)


main()
'''


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


def pdeathsig():
    """In a child before exec: die with SIGKILL if the bench dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass


# ---------------------------------------------------------------- interpreters

class Interp(object):
    """name "3.11"; argv runs a script; root is "/" or the chroot."""

    def __init__(self, name, argv, root="/"):
        self.name, self.argv, self.root = name, list(argv), root
        self.version = None
        self.host_dir = self.dir = None

    def setup(self, tag):
        if self.root == "/":
            self.host_dir = tempfile.mkdtemp(prefix="pbp-bench-%s-" % tag)
        else:
            base = os.path.join(self.root, "tmp")
            self.host_dir = tempfile.mkdtemp(prefix="pbp-bench-%s-" % tag, dir=base)
        os.chmod(self.host_dir, 0o777)
        self.dir = "/" + os.path.relpath(self.host_dir, self.root) if self.root != "/" else self.host_dir
        with open(os.path.join(self.host_dir, "target.py"), "w") as f:
            f.write(TARGET_PY)
        self.script = os.path.join(self.dir, "target.py")
        self.seq = 0

    def files(self, stem):
        """(host path, path as the interpreter sees it) of a fresh file name."""
        self.seq += 1
        name = "%s-%d.json" % (stem, self.seq)
        return os.path.join(self.host_dir, name), os.path.join(self.dir, name)

    def cmd(self, *args):
        return self.argv + [self.script] + [str(a) for a in args]

    def cleanup(self):
        if self.host_dir:
            shutil.rmtree(self.host_dir, ignore_errors=True)


def pyenv_exe(minor):
    cands = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin", "python3")))
    cands = [c for c in cands if re.search(r"/3\.%d\.\d+/bin/" % minor, c)]
    return cands[-1] if cands else None


def chroot_argv():
    """argv prefix running the chroot's python3.14 with a /proc of its own:
    mounted in a private mount namespace, so it is nobody else's to unmount
    and goes away with the process. unshare, sh and chroot all exec, so the
    interpreter keeps the pid the bench started."""
    py = os.path.join(CHROOT, "usr/bin/python3.14")
    if os.geteuid() != 0 or not os.path.exists(py) or not os.path.exists(os.path.join(CHROOT, ".pbp-stamp")):
        return None
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t proc proc "$0/proc" && exec chroot "$0" /usr/bin/python3.14 "$@"', CHROOT]


def discover(wanted):
    out, missing = [], []
    for name in wanted:
        if name.startswith("3.14"):
            argv = chroot_argv()
            if argv:
                out.append(Interp("3.14-chroot", argv, CHROOT))
            else:
                missing.append((name, "no usable chroot at %s (make chroot)" % CHROOT))
            continue
        m = re.match(r"^3\.(\d+)$", name)
        exe = pyenv_exe(int(m.group(1))) if m else None
        if exe:
            out.append(Interp(name, [exe]))
        else:
            missing.append((name, "no pyenv %s under %s" % (name, PYENV)))
    for it in out:
        r = subprocess.run(it.argv + ["-c", "import sys; print(sys.version.split()[0])"],
                           capture_output=True, text=True, timeout=60)
        it.version = r.stdout.strip() if r.returncode == 0 else None
    bad = [i for i in out if not i.version]
    for i in bad:
        missing.append((i.name, "does not run"))
    return [i for i in out if i.version], missing


# ---------------------------------------------------------------- processes

_live = {}


def spawn(it, *args, ready_stem="ready", timeout=60, env=None):
    """Start a long-lived target; returns (Popen, ready JSON)."""
    host, inside = it.files(ready_stem)
    proc = subprocess.Popen(it.cmd(*(list(args) + [inside])), stdin=subprocess.DEVNULL,
                            env=dict(os.environ, **(env or {})),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=pdeathsig)
    _live[proc.pid] = proc
    deadline = time.monotonic() + timeout
    while not os.path.exists(host):
        if proc.poll() is not None or time.monotonic() > deadline:
            kill(proc)
            raise RuntimeError("target %s %s did not start" % (it.name, " ".join(map(str, args))))
        time.sleep(0.01)
    with open(host) as f:
        return proc, json.load(f)


def kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    _live.pop(proc.pid, None)


def kill_all():
    for p in list(_live.values()):
        kill(p)


def task_cpu_ns(pid):
    """CPU time of every thread of pid, ns (schedstat); None when gone."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError):
        return None
    return total


def vm_hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# ---------------------------------------------------------------- BPF statistics

SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
BPF_PROG_GET_FD_BY_ID = 13
BPF_PROG_TYPE_PERF_EVENT = 7
_libc = ctypes.CDLL(None, use_errno=True)


class BpfStats(object):
    """kernel.bpf_stats_enabled=1 while in use; restored after."""

    def __init__(self):
        self.old = None

    def __enter__(self):
        try:
            with open("/proc/sys/kernel/bpf_stats_enabled") as f:
                self.old = f.read().strip()
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write("1")
        except OSError:
            self.old = None
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(self.old)


def fdinfo(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k.strip()] = v.strip()
    except OSError:
        pass
    return out


def grab_sample_prog(pid, timeout=10.0):
    """An fd of our own on pid's perf_event BPF program, so that its run
    statistics outlive pid. None if it never showed up."""
    if SYS_BPF is None:
        return None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            return None
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf-prog":
                    continue
            except OSError:
                continue
            info = fdinfo("/proc/%d/fdinfo/%s" % (pid, fd))
            if info.get("prog_type") != str(BPF_PROG_TYPE_PERF_EVENT) or "prog_id" not in info:
                continue
            attr = ctypes.create_string_buffer(struct.pack("=III", int(info["prog_id"]), 0, 0), 128)
            own = _libc.syscall(SYS_BPF, BPF_PROG_GET_FD_BY_ID, attr, 128)
            return own if own >= 0 else None
        time.sleep(0.005)
    return None


PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())


def online_cpus():
    out = []
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            a, _, b = part.partition("-")
            out += range(int(a), int(b or a) + 1)
    return out


def timer_events(hz):
    """cpu-clock perf events sampling at hz on every online CPU, as pybpfprof
    opens them, but with no BPF program and no buffer: only the interrupt."""
    fds = []
    for cpu in online_cpus():
        # struct perf_event_attr: type, size, config, sample_period; the rest zero.
        attr = ctypes.create_string_buffer(struct.pack("=IIQQ", 1, 128, 0, 10**9 // hz), 128)
        fd = _libc.syscall(PERF_EVENT_OPEN, attr, -1, cpu, -1, 8)     # PERF_FLAG_FD_CLOEXEC
        if fd < 0:
            for f in fds:
                os.close(f)
            raise OSError(ctypes.get_errno(), "perf_event_open")
        fds.append(fd)
    return fds


def perf_links(pid):
    """Perf-event BPF links pid holds: one per CPU once its sampler is attached."""
    n = 0
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return -1
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf_link":
                continue
        except OSError:
            continue
        if fdinfo("/proc/%d/fdinfo/%s" % (pid, fd)).get("link_type") == "perf":
            n += 1
    return n


def prog_stats(fd):
    info = fdinfo("/proc/self/fdinfo/%d" % fd)
    try:
        return int(info["run_time_ns"]), int(info["run_cnt"])
    except (KeyError, ValueError):
        return None


# ---------------------------------------------------------------- pybpfprof runs

SUMMARY_RE = re.compile(r"(\w+) mode, (\d+) samples in ([\d.]+) s .*?, (\d+) lost")
KERNEL_RE = re.compile(r"kernel: (\d+) taken, (\d+) delivered; stacks: (\d+) deeper than \d+, "
                       r"(\d+) faulted, (\d+) completed in user space, (\d+) failed")
STAT_RES = {
    "page": re.compile(r"page cache\s+(\d+) hits, (\d+) misses"),
    "reads": re.compile(r"remote reads\s+(\d+) \(.*?\), (\d+) bytes"),
    "code": re.compile(r"code objects\s+(\d+) hits, (\d+) misses"),
    "ticks": re.compile(r"tick stacks\s+(\d+) reused.*?, (\d+) from the kernel.*?, (\d+) taken by "
                        r"the kernel as the thread left the CPU, (\d+) read at"),
}
SAMPLER_RE = re.compile(r"sampler\s+(\d+) interrupts/s per busy CPU \(at (\d+) Hz\), program "
                        r"([\d.]+)% of each CPU, one interrupt ([\d.]+) us")


def parse_summary(text):
    s = {}
    m = SUMMARY_RE.search(text)
    if m:
        s.update(samples=int(m.group(2)), secs=float(m.group(3)), lost=int(m.group(4)))
    m = KERNEL_RE.search(text)
    if m:
        s.update(taken=int(m.group(1)), delivered=int(m.group(2)), truncated=int(m.group(3)),
                 faulted=int(m.group(4)), completed=int(m.group(5)), failed=int(m.group(6)))
    m = SAMPLER_RE.search(text)
    if m:
        s.update(irq_hz=int(m.group(1)), ran_hz=int(m.group(2)), prog_pct=float(m.group(3)),
                 irq_us=float(m.group(4)))
    for key, rx in STAT_RES.items():
        vals = [list(map(int, g)) for g in rx.findall(text)]
        if vals:
            s[key] = [sum(col) for col in zip(*vals)]   # summed over targets
    return s


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
        p = subprocess.Popen([PBP, "-o", out] + [str(a) for a in args],
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
    r.s = parse_summary(r.stderr)
    r.bpf = None
    if r.prog_fd is not None:
        r.bpf = prog_stats(r.prog_fd)
        os.close(r.prog_fd)
    if r.rc != 0:
        raise RuntimeError("pybpfprof %s exited %d:\n%s" % (" ".join(map(str, args)), r.rc,
                                                             r.stderr[-2000:]))
    return r


def count_in(path, func):
    """Samples whose stack holds a frame of func, from a collapsed profile."""
    n = 0
    needle = func + " ("
    with open(path) as f:
        for line in f:
            stack, _, cnt = line.rstrip("\n").rpartition(" ")
            if needle in stack:
                n += int(cnt)
    return n


# ---------------------------------------------------------------- statistics

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else None


def fast_mode(runs):
    """The host under this VM runs the same work at one of two speeds, about
    1.7x apart, for stretches of 0.1 s to seconds, with no load or steal the
    guest can see. A run's "fast" time: its pieces within FAST_MODE of its own
    5th-percentile piece, scaled to the whole run. A run spent wholly in the
    slow mode gives a slow time, and an outlier ratio that the median over
    repetitions leaves out. "fastshare": the share of its pieces within
    FAST_MODE of the fastest 5th percentile among the runs."""
    floor = min(sorted(r["chunks"])[len(r["chunks"]) // 20] for r in runs)
    for r in runs:
        pieces = sorted(r["chunks"])
        limit = pieces[len(pieces) // 20] * FAST_MODE
        fast = [c for c in pieces if c <= limit]
        r["fast"] = sum(fast) / len(fast) * len(pieces)
        r["fastshare"] = sum(1 for c in pieces if c <= floor * FAST_MODE) / len(pieces)


def rotate(cases, k):
    k %= len(cases)
    return cases[k:] + cases[:k]


class Figure(object):
    """One measured figure: the values of each repetition."""

    def __init__(self, key, label, unit, values, fmt="%.3g", note=""):
        self.key, self.label, self.unit = key, label, unit
        self.values = [v for v in values if v is not None]
        self.fmt, self.note = fmt, note

    @property
    def median(self):
        return med(self.values)

    def verdict(self):
        t = TARGETS.get(self.key)
        if not t or self.median is None:
            return ""
        op, lim = t
        ok = {"<=": self.median <= lim, "<": self.median < lim,
              ">=": self.median >= lim, ">": self.median > lim}[op]
        return "PASS" if ok else "FAIL"

    def target_text(self):
        t = TARGETS.get(self.key)
        if not t:
            return "-"
        op, lim = t
        return "%s %s" % (op.replace("<=", "≤").replace(">=", "≥"), self.fmt % lim)

    def cell(self):
        if self.median is None:
            return "n/a"
        lo, hi = spread(self.values)
        if len(self.values) == 1:
            return self.fmt % self.median
        return "%s [%s–%s]" % (self.fmt % self.median, self.fmt % lo, self.fmt % hi)


# ---------------------------------------------------------------- scenarios

class Bench(object):
    def __init__(self, cfg, interps, only):
        self.cfg, self.interps, self.only = cfg, interps, only
        self.figs = {}          # interp name -> {key: Figure}
        self.detail = {}        # scenario -> list of markdown lines
        self.tmp = tempfile.mkdtemp(prefix="pbp-bench-out-")
        self.has_all = "--all" in subprocess.run([PBP, "--help"], capture_output=True,
                                                 text=True).stdout

    def add(self, it, fig):
        self.figs.setdefault(it.name, {})[fig.key] = fig

    def out(self, stem):
        return os.path.join(self.tmp, "%s-%d.txt" % (stem, len(os.listdir(self.tmp))))

    def det(self, scen, line):
        self.detail.setdefault(scen, []).append(line)

    # -- 1. slowdown and achieved rate (launch mode)

    def timed(self, it, iters, case):
        """One run of the workload: case None (unprofiled), ("pbp", HZ) or
        ("timer", HZ): bare cpu-clock perf events at HZ on every CPU, no BPF
        program, the floor any timer-driven sampler pays on this machine."""
        host, inside = it.files("result")
        cmd = it.cmd("timed", DEPTH, iters, inside, GUARD_S, CHUNKS)
        if case is None or case[0] == "timer":
            fds = timer_events(case[1]) if case else []
            try:
                subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, preexec_fn=pdeathsig,
                               timeout=600)
            finally:
                for fd in fds:
                    os.close(fd)
        else:
            run_pbp(["-F", case[1], "--"] + cmd, self.out("slow"))
        with open(host) as f:
            res = json.load(f)
        res["oncpu"] = res["wall"] - res["delay"]
        return res

    def calibrate(self, it):
        probe = 300
        for _ in range(3):
            took = min(self.timed(it, probe, None)["oncpu"] for _ in range(2))
            if took > 0.2:
                break
            probe = int(probe * 0.25 / took)
        return max(10, int(probe * self.cfg["work_s"] / took))

    def slowdown(self, it):
        iters = self.calibrate(it)
        cases = [None] + [("pbp", hz) for hz in RATES] + [("timer", hz) for hz in TIMER_RATES]
        runs = {c: [] for c in cases}
        for rep in range(self.cfg["slow_reps"]):
            for c in rotate(cases, rep):
                runs[c].append(self.timed(it, iters, c))
        for case in cases:
            fast_mode(runs[case])
        base = runs[None]

        def ratios(case, key):
            return [r[key] / b[key] if r[key] is not None and b[key] is not None else None
                    for r, b in zip(runs[case], base)]

        for hz in RATES:
            self.add(it, Figure("slowdown@%d" % hz, "slowdown, cpu mode, %d Hz" % hz, "x",
                                ratios(("pbp", hz), "fast"), "%.4f"))
            self.add(it, Figure("oncpuslow@%d" % hz, "slowdown, whole on-CPU time, %d Hz" % hz,
                                "x", ratios(("pbp", hz), "oncpu"), "%.4f"))
            self.add(it, Figure("wallslow@%d" % hz, "slowdown by wall clock, %d Hz" % hz, "x",
                                ratios(("pbp", hz), "wall"), "%.4f"))
            self.add(it, Figure("minslow@%d" % hz, "slowdown, fastest run / fastest, %d Hz" % hz,
                                "x", [min(r["oncpu"] for r in runs[("pbp", hz)]) /
                                      min(b["oncpu"] for b in base)], "%.4f"))
        for hz in TIMER_RATES:
            self.add(it, Figure("timer@%d" % hz, "floor: bare perf timer, no BPF, %d Hz" % hz,
                                "x", ratios(("timer", hz), "fast"), "%.4f"))
            self.add(it, Figure("excess@%d" % hz, "slowdown / floor, %d Hz" % hz, "x",
                                [a / b if a and b else None for a, b in zip(
                                    ratios(("pbp", hz), "fast"), ratios(("timer", hz), "fast"))],
                                "%.4f"))
        self.add(it, Figure("fastshare", "pieces in the fast mode, unprofiled", "%",
                            [r["fastshare"] * 100 for r in base], "%.0f"))
        self.det("slowdown", "| %s | %d iterations; unprofiled: %.3f s on CPU, %.3f s wall "
                 "(medians) | %s |" % (
                     it.name, iters, med([b["oncpu"] for b in base]), med([b["wall"] for b in base]),
                     "; ".join("%s %d Hz: %.3f s on CPU" % (c[0], c[1], med([r["oncpu"] for r in runs[c]]))
                               for c in cases[1:])))

    # -- 2, 3 and 6: profiler cost per sample, reads per sample (-p)

    def cost_runs(self, it, busy, idle, rates, reps, low=True):
        """{hz or None: [Run]} with None the idle-target baseline; low: the
        99 Hz runs and the baseline last low_run_s."""
        cases = [None] + rates
        runs = {c: [] for c in cases}
        w = self.cfg["warm_s"]
        with BpfStats():
            for rep in range(reps):
                for c in rotate(cases, rep):
                    pid = idle if c is None else busy
                    hz = 999 if c is None else c
                    d = self.cfg["low_run_s"] if low and c in (None, 99) else self.cfg["run_s"]
                    runs[c].append(run_pbp(["-p", pid, "-F", hz, "-d", d, "--stats"],
                                           self.out("cost"), grab=True, ref=pid,
                                           window=(w, d - 0.25)))
        return runs

    @staticmethod
    def steady(run):
        """Profiler CPU per sample in steady state, µs: all its CPU per second
        after start-up (the poll loop, rescans and every other fixed cost
        included) over the samples delivered per second."""
        n, secs = run.s.get("delivered"), run.s.get("secs")
        if not n or not secs or run.window_cpu is None:
            return None
        return run.window_cpu / (n / secs) * 1e6

    @staticmethod
    def marginal(run, base):
        """Profiler CPU per sample in steady state, µs: its CPU per second
        after start-up beyond the idle run's, over the samples per second."""
        n, secs = run.s.get("delivered"), run.s.get("secs")
        if not n or not secs or run.window_cpu is None or base.window_cpu is None:
            return None
        return (run.window_cpu - base.window_cpu) / (n / secs) * 1e6

    @staticmethod
    def marginal_total(run, base):
        """The same from whole runs (wait4 rusage): start-up noise included."""
        n = run.s.get("delivered") or 0
        return (run.cpu - base.cpu) / n * 1e6 if n else None

    @staticmethod
    def kernel_us(run, base):
        """BPF program time per target sample, µs: the idle run gives the
        cost of a run on another task (every CPU's event runs the program)."""
        if not run.bpf or not base.bpf or not base.bpf[1] or not run.s.get("taken"):
            return None
        other = base.bpf[0] / base.bpf[1]
        taken = run.s["taken"]
        return (run.bpf[0] - (run.bpf[1] - taken) * other) / taken / 1e3

    def bpf_share(self, run, base):
        """% of the target's CPU time, while sampled, spent in the BPF program
        on its own samples: what the profiler adds to it beyond the timer
        interrupt every sampler pays."""
        us = self.kernel_us(run, base)
        if us is None or not run.ref_cpu:
            return None
        return 100.0 * us * run.s["taken"] / 1e6 / run.ref_cpu

    def cost(self, it):
        busy, _ = spawn(it, "hold", DEPTH)
        idle, _ = spawn(it, "idle")
        try:
            runs = self.cost_runs(it, busy.pid, idle.pid, RATES, self.cfg["reps"])
        finally:
            kill(busy)
            kill(idle)
        base = runs[None]
        self.add(it, Figure("fixed_ms", "fixed cost (idle target, %g s run)" % self.cfg["low_run_s"],
                            "ms", [b.cpu * 1e3 for b in base], "%.1f"))
        self.add(it, Figure("loop_ms", "poll loop, idle target", "ms/s",
                            [b.window_cpu * 1e3 if b.window_cpu is not None else None
                             for b in base], "%.2f"))
        for hz in RATES:
            rs = runs[hz]
            self.add(it, Figure("cost_us@%d" % hz, "profiler CPU/sample, %d Hz" % hz, "µs",
                                [self.steady(r) for r in rs], "%.2f"))
            self.add(it, Figure("marginal_us@%d" % hz, "profiler CPU/sample beyond an idle "
                                "target's 999 Hz run, %d Hz" % hz, "µs",
                                [self.marginal(r, b) for r, b in zip(rs, base)], "%.2f"))
            self.add(it, Figure("rusage_us@%d" % hz, "profiler CPU/sample, whole runs (rusage), %d Hz" % hz,
                                "µs", [self.marginal_total(r, b) for r, b in zip(rs, base)], "%.2f"))
            self.add(it, Figure("total_us@%d" % hz, "profiler CPU/sample incl. fixed, %d Hz" % hz,
                                "µs", [r.cpu / r.s["delivered"] * 1e6 if r.s.get("delivered") else None
                                       for r in rs], "%.1f"))
            self.add(it, Figure("kernel_us@%d" % hz, "BPF time/sample (in target), %d Hz" % hz,
                                "µs", [self.kernel_us(r, b) for r, b in zip(rs, base)], "%.2f"))
            self.add(it, Figure("bpf_share@%d" % hz, "target CPU spent in the BPF program, "
                                "%d Hz" % hz, "%", [self.bpf_share(r, b) for r, b in zip(rs, base)],
                                "%.3f"))
            # Of the rate the run sampled at: above 1000 Hz pybpfprof may lower
            # -F to what the host sustains; the rate scenario reports that.
            self.add(it, Figure("achieved@%d" % hz, "achieved rate, %d Hz" % hz, "",
                                [r.s["delivered"] / (r.ref_cpu * r.s.get("ran_hz", hz))
                                 if r.ref_cpu and r.s.get("delivered") is not None else None
                                 for r in rs], "%.4f"))
            self.add(it, Figure("lost@%d" % hz, "lost samples, %d Hz" % hz, "",
                                [r.s.get("lost") for r in rs], "%d"))
        self.reads(it, runs)
        self.det("cost", "| %s | idle run %.1f ms CPU | %s |" % (
            it.name, med([b.cpu * 1e3 for b in base]),
            "; ".join("%d Hz: %d delivered, %.1f ms CPU" % (
                hz, int(med([r.s.get("delivered", 0) for r in runs[hz]])),
                med([r.cpu * 1e3 for r in runs[hz]])) for hz in RATES)))

    def reads(self, it, runs):
        lo, hi = runs[999], runs[9999]      # runs of the same length
        steady, sbytes = [], []
        for a, b in zip(lo, hi):
            dn = b.s.get("delivered", 0) - a.s.get("delivered", 0)
            if dn > 0 and "reads" in a.s and "reads" in b.s:
                steady.append((b.s["reads"][0] - a.s["reads"][0]) / dn)
                sbytes.append((b.s["reads"][1] - a.s["reads"][1]) / dn)
        self.add(it, Figure("reads_steady", "remote reads/sample, steady state", "",
                            steady, "%.3f"))
        self.add(it, Figure("bytes_steady", "remote bytes/sample, steady state", "B",
                            sbytes, "%.1f"))
        mid = runs[999]

        def rate(key, r):
            v = r.s.get(key)
            return 100.0 * v[0] / (v[0] + v[1]) if v and v[0] + v[1] else None

        self.add(it, Figure("reads_999", "remote reads/sample, whole 999 Hz run", "",
                            [r.s["reads"][0] / r.s["delivered"] if r.s.get("delivered") and
                             "reads" in r.s else None for r in mid], "%.3f"))
        self.add(it, Figure("page_hit", "page cache hit rate, 999 Hz", "%",
                            [rate("page", r) for r in mid], "%.1f"))
        self.add(it, Figure("code_hit", "code-object cache hit rate, 999 Hz", "%",
                            [rate("code", r) for r in mid], "%.3f"))

    def deep(self, it):
        busy, _ = spawn(it, "hold", DEEP)
        idle, _ = spawn(it, "idle")
        try:
            runs = self.cost_runs(it, busy.pid, idle.pid, [999], self.cfg["deep_reps"], low=False)
        finally:
            kill(busy)
            kill(idle)
        base, rs = runs[None], runs[999]
        self.add(it, Figure("deep_cost_us", "deep 500: profiler CPU/sample, 999 Hz", "µs",
                            [self.steady(r) for r in rs], "%.1f"))
        self.add(it, Figure("deep_kernel_us", "deep 500: BPF time/sample", "µs",
                            [self.kernel_us(r, b) for r, b in zip(rs, base)], "%.2f"))
        self.add(it, Figure("deep_completed", "deep 500: stacks finished in user space", "%",
                            [100.0 * r.s["completed"] / r.s["delivered"]
                             if r.s.get("delivered") else None for r in rs], "%.1f"))
        self.add(it, Figure("deep_reads", "deep 500: remote reads/sample", "",
                            [r.s["reads"][0] / r.s["delivered"] if r.s.get("delivered") and
                             "reads" in r.s else None for r in rs], "%.2f"))
        self.det("deep", "| %s | %s |" % (it.name, "; ".join(
            "%d delivered, %d truncated, %d completed, %d failed, %.1f ms CPU (idle %.1f)" % (
                r.s.get("delivered", 0), r.s.get("truncated", 0), r.s.get("completed", 0),
                r.s.get("failed", 0), r.cpu * 1e3, b.cpu * 1e3) for r, b in zip(rs, base))))

    # -- 4. wall mode with idle threads

    def wall(self, it):
        d, w = self.cfg["run_s"], self.cfg["warm_s"]
        per = {n: [] for n in WALL_IDLE}
        ticks = {n: [] for n in WALL_IDLE}
        for rep in range(self.cfg["reps"]):
            for n in rotate(WALL_IDLE, rep):
                proc, rd = spawn(it, "threads", n, DEPTH)
                try:
                    r = run_pbp(["-p", proc.pid, "-m", "wall", "-F", 99, "-d", d, "--stats"],
                                self.out("wall"), window=(w, d - 0.25))
                finally:
                    kill(proc)
                per[n].append(r.window_cpu * 1e3 if r.window_cpu is not None else None)
                ticks[n].append(r.s.get("ticks"))
        for n in WALL_IDLE:
            self.add(it, Figure("wall_ms@%d" % n, "wall 99 Hz, %d idle threads: profiler CPU" % n,
                                "ms/s", per[n], "%.2f"))
        ratio = [a / b if a is not None and b else None for a, b in zip(per[WALL_IDLE[-1]],
                                                                       per[WALL_IDLE[0]])]
        self.add(it, Figure("wall_ratio", "wall: CPU 200 idle / 0 idle", "x", ratio, "%.2f"))
        self.det("wall", "| %s | %s |" % (it.name, "; ".join(
            "%d idle: tick stacks reused/from kernel/at switch/read %s" % (
                n, "/".join(str(x) for x in (ticks[n][-1] or ["?"]))) for n in WALL_IDLE)))
        self.wakers(it)

    def wakers(self, it):
        """Threads that wake 50 times a second, 30 deep: the kernel copies each
        stack as the thread goes back to sleep, so ticks read nothing; the
        copies run in the target, so its CPU is measured unprofiled and
        profiled (interleaved, same window)."""
        d, w = self.cfg["run_s"], self.cfg["warm_s"]
        prof, base, mine, read = [], [], [], []
        for rep in range(self.cfg["reps"]):
            proc, rd = spawn(it, "wakers", WAKERS, DEPTH)
            try:
                for case in rotate(["none", "pbp"], rep):
                    if case == "none":
                        time.sleep(w)
                        c0, t0 = task_cpu_ns(proc.pid), time.monotonic()
                        time.sleep(d - w - 0.25)
                        c1, t1 = task_cpu_ns(proc.pid), time.monotonic()
                        base.append((c1 - c0) / 1e6 / (t1 - t0))
                        continue
                    r = run_pbp(["-p", proc.pid, "-m", "wall", "-F", 99, "-d", d, "--stats"],
                                self.out("wakers"), window=(w, d - 0.25), window_ref=proc.pid)
                    prof.append(r.window_cpu * 1e3 if r.window_cpu is not None else None)
                    mine.append(r.window_ref_cpu * 1e3 if r.window_ref_cpu is not None else None)
                    t = r.s.get("ticks")
                    read.append(100.0 * t[3] / sum(t) if t and sum(t) else None)
            finally:
                kill(proc)
        label = "wall 99 Hz, %d threads waking 50/s, %d deep" % (WAKERS, DEPTH)
        self.add(it, Figure("wakers_ms", label + ": profiler CPU", "ms/s", prof, "%.2f"))
        self.add(it, Figure("wakers_read", label + ": tick stacks read", "%", read, "%.1f"))
        ratio = [a / b if a is not None and b else None for a, b in zip(mine, base)]
        self.add(it, Figure("wakers_target", label + ": target CPU, profiled / not", "x", ratio,
                            "%.3f"))
        self.det("wall", "| %s | %d wakers: target CPU unprofiled %s ms/s, profiled %s ms/s |" % (
            it.name, WAKERS, "/".join("%.1f" % x for x in base),
            "/".join("%.1f" % x for x in mine if x is not None)))

    # -- 5. a whole host

    def host(self, it):
        n = self.cfg["host_procs"]
        procs = []
        try:
            env = {"PBP_BENCH_COMM": HOST_COMM}
            for i in range(n):
                procs.append(spawn(it, "spin", DEPTH, env=env)[0] if i < 2 else
                             spawn(it, "sleeploop", env=env)[0])
            pids = [p.pid for p in procs]
            if self.has_all:
                # Every process of the host would include other people's: the
                # bench's 50 are told apart by their comm.
                args, how = ["-a", "--comm", "^%s$" % HOST_COMM, "-F", 19], "-a --comm"
            else:
                # TODO(-a): switch to `-a -F 19` once build/pybpfprof --help lists --all;
                # the check above (self.has_all) already does so when it does.
                args, how = ["-p", ",".join(map(str, pids)), "-F", 19], "-p list of %d pids" % n
            d, w = self.cfg["host_run_s"], self.cfg["host_warm_s"]
            share, hwm, samples = [], [], []
            for rep in range(self.cfg["reps"]):
                r = run_pbp(args + ["-d", d, "--stats"], self.out("host"), window=(w, d - 0.25))
                share.append(r.window_cpu * 100 if r.window_cpu is not None else None)
                hwm.append(r.hwm_kb / 1024.0 if r.hwm_kb else None)
                samples.append(r.s.get("delivered"))
                fixed = r.cpu
            self.add(it, Figure("host_core_pct", "%d procs, %s, 19 Hz: CPU, %% of a core" % (n, how),
                                "%", share, "%.2f"))
            self.add(it, Figure("host_hwm_mb", "%d procs, %s: profiler VmHWM" % (n, how), "MB",
                                hwm, "%.1f"))
            self.det("host", "| %s | %s | %d procs (2 busy), %s samples delivered per run, "
                     "last run %.2f s CPU in %.1f s |" % (it.name, how, n,
                                                          "/".join(map(str, samples)), fixed, d))
        finally:
            for p in procs:
                kill(p)

    # -- 7. high rates: what the host sustains

    def rate(self, it):
        """-F 10k/20k/50k: pybpfprof caps the rate at what the host sustains
        (see README, Sampling rate); the figures say what it ran at and what
        that cost."""
        d = self.cfg["run_s"]
        busy, _ = spawn(it, "hold", DEPTH)
        figs = {hz: dict(ran=[], irq=[], achieved=[], share=[]) for hz in HIGH_RATES}
        try:
            for rep in range(self.cfg["reps"]):
                for hz in rotate(HIGH_RATES, rep):
                    r = run_pbp(["-p", busy.pid, "-F", hz, "-d", d, "--stats"],
                                self.out("rate"), ref=busy.pid, timeout=d + 60)
                    f = figs[hz]
                    f["ran"].append(r.s.get("ran_hz"))
                    f["irq"].append(r.s.get("irq_hz"))
                    f["share"].append(r.s.get("prog_pct"))
                    f["achieved"].append(r.s["delivered"] / r.ref_cpu
                                         if r.ref_cpu and r.s.get("delivered") is not None else None)
                    irq_us = r.s.get("irq_us")
        finally:
            kill(busy)
        for hz in HIGH_RATES:
            f = figs[hz]
            self.add(it, Figure("rate_ran@%d" % hz, "-F %d: rate run at" % hz, "Hz", f["ran"], "%.0f"))
            self.add(it, Figure("rate_irq@%d" % hz, "-F %d: interrupts/s per busy CPU" % hz, "",
                                f["irq"], "%.0f"))
            self.add(it, Figure("rate_achieved@%d" % hz, "-F %d: samples/s of target CPU" % hz, "",
                                f["achieved"], "%.0f"))
            self.add(it, Figure("rate_share@%d" % hz, "-F %d: BPF program, share of each CPU" % hz,
                                "%", f["share"], "%.3f"))
        self.det("rate", "| %s | one interrupt %s µs (last run) | %s |" % (
            it.name, irq_us, "; ".join("-F %d: ran at %s Hz" % (hz, "/".join(
                str(x) for x in figs[hz]["ran"])) for hz in HIGH_RATES)))

    # -- driver

    def run(self):
        order = [s for s in SCENARIOS if s in self.only]
        for it in self.interps:
            it.setup(it.name)
            try:
                for scen in order:
                    if scen == "reads" and "cost" in order:
                        continue    # measured by the cost runs
                    log("%s on %s" % (scen, it.name))
                    t = time.monotonic()
                    {"slowdown": self.slowdown, "cost": self.cost, "reads": self.cost,
                     "wall": self.wall, "host": self.host, "deep": self.deep,
                     "rate": self.rate}[scen](it)
                    log("  %.0f s" % (time.monotonic() - t))
            finally:
                kill_all()
                it.cleanup()


# ---------------------------------------------------------------- report

ROWS = [
    # (key, scenario)
    ("slowdown@99", "slowdown"), ("slowdown@999", "slowdown"), ("slowdown@9999", "slowdown"),
    ("timer@999", "slowdown"), ("timer@9999", "slowdown"),
    ("achieved@99", "cost"), ("achieved@999", "cost"), ("achieved@9999", "cost"),
    ("cost_us@99", "cost"), ("cost_us@999", "cost"), ("cost_us@9999", "cost"),
    ("kernel_us@999", "cost"), ("bpf_share@99", "cost"), ("bpf_share@999", "cost"),
    ("reads_steady", "reads"), ("page_hit", "reads"), ("code_hit", "reads"),
    ("wall_ms@0", "wall"), ("wall_ms@50", "wall"), ("wall_ms@200", "wall"), ("wall_ratio", "wall"),
    ("wakers_ms", "wall"), ("wakers_read", "wall"), ("wakers_target", "wall"),
    ("host_core_pct", "host"), ("host_hwm_mb", "host"),
    ("deep_cost_us", "deep"), ("deep_kernel_us", "deep"), ("deep_completed", "deep"),
] + [("rate_%s@%d" % (k, hz), "rate") for hz in HIGH_RATES
     for k in ("ran", "irq", "achieved", "share")]
DETAIL_KEYS = [
    "oncpuslow@99", "oncpuslow@999", "oncpuslow@9999", "fastshare",
    "minslow@99", "minslow@999", "minslow@9999",
    "wallslow@99", "wallslow@999", "wallslow@9999", "excess@999", "excess@9999", "fixed_ms",
    "loop_ms",
    "marginal_us@99", "marginal_us@999", "marginal_us@9999",
    "rusage_us@99", "rusage_us@999", "rusage_us@9999",
    "total_us@99", "total_us@999", "total_us@9999", "kernel_us@99", "kernel_us@9999",
    "lost@99", "lost@999", "lost@9999",
    "bytes_steady", "reads_999", "deep_reads",
]


def label_of(b, key):
    for figs in b.figs.values():
        if key in figs:
            f = figs[key]
            return f.label + (" (%s)" % f.unit if f.unit and f.unit not in ("x",) else "")
    return key


def table(b, keys, markdown):
    names = [it.name for it in b.interps]
    rows = []
    for key in keys:
        if not any(key in b.figs.get(n, {}) for n in names):
            continue
        cells, verdicts = [], []
        tgt = "-"
        for n in names:
            f = b.figs.get(n, {}).get(key)
            if f is None:
                cells.append("")
                continue
            tgt = f.target_text()
            v = f.verdict()
            verdicts.append(v)
            cells.append(f.cell() + (" " + v if v and not markdown else ""))
        verdict = ("FAIL" if "FAIL" in verdicts else "PASS") if any(verdicts) else "-"
        rows.append([label_of(b, key)] + cells + [tgt] + ([verdict] if markdown else []))
    head = ["figure (median [min–max])"] + names + ["target"] + (["pass/fail"] if markdown else [])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return lines
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    return [fmt % tuple(head), fmt % tuple("-" * w for w in widths)] + [fmt % tuple(r) for r in rows]


def machine(interps):
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    git = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip() or "?"
    ver = subprocess.run([PBP, "--version"], capture_output=True, text=True).stdout.strip()

    def sysctl(name):
        try:
            with open("/proc/sys/kernel/" + name) as f:
                return f.read().strip()
        except OSError:
            return "?"

    return [
        "- CPU: %s, %d cores (online: %s)" % (model, os.cpu_count() or 0,
                                              open("/sys/devices/system/cpu/online").read().strip()),
        "- Kernel: %s %s" % (platform.release(), platform.machine()),
        "- Date: %s" % time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "- Pythons: %s" % ", ".join("%s = %s (%s)" % (
            i.name, i.version, i.argv[0] if i.root == "/" else
            "chroot %s /usr/bin/python3.14, own /proc in a private mount namespace" % i.root)
            for i in interps),
        "- pybpfprof: %s, tree %s" % (ver or "?", git),
        "- kernel.perf_event_max_sample_rate: %s; perf_cpu_time_max_percent: %s" % (
            sysctl("perf_event_max_sample_rate"), sysctl("perf_cpu_time_max_percent")),
    ]


def old_analysis(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    i, j = text.find(ANALYSIS_BEGIN), text.find(ANALYSIS_END)
    if i < 0 or j < i:
        return None
    return text[i:j + len(ANALYSIS_END)]


METHOD = """\
- Every figure comes from this one run. Each repetition runs every case of a
  scenario once, in an order rotated from one repetition to the next (A B C D,
  B C D A, ...); figures are medians over the repetitions, with min–max.
- slowdown: `target.py timed` sleeps %(guard).1f s, then runs a fixed number of
  `rec()` recursions %(depth)d deep (each ends in a 200-iteration loop, ~%(work_s)g s),
  and times itself: its time on a CPU is the wall time minus the time it waited
  for one (schedstat's run_delay), so other load on this shared 2-vCPU machine
  does not count, while interrupts and the BPF program, which run in its time,
  do. Profiled runs are `pybpfprof -F HZ -o FILE -- python target.py timed ...`
  (cpu mode); the ratio pairs each with the unprofiled run of its repetition.
  The host under this VM runs the same work at one of two speeds, about 1.7x
  apart, for stretches of 0.1 s to seconds, with no steal or load the guest
  can see: the workload is also timed in %(chunks)d pieces, and the headline ratio
  uses each run's "fast mode" pieces only (those within %(fast_mode)gx of its own
  5th percentile piece, scaled to the whole run). Profiling slows every piece
  alike, so this keeps the profiler's cost and drops the host's; a run spent
  wholly in the slow mode makes an outlier pair, which the median leaves out.
  The ratio of whole on-CPU times, and the share of the unprofiled runs'
  pieces in the fast mode, are in the details.
  "floor" runs open the same cpu-clock perf events (one per CPU, same period)
  with no BPF program attached: the cost of the timer interrupts alone.
- cost: `pybpfprof -p PID -F HZ -d %(run_s)g --stats` (%(low_run_s)g s at 99 Hz and for the
  idle baseline) against a process that
  recursed %(depth)d deep and stays there: all of the profiler's CPU (its poll
  loop and rescans included) per second between %(warm_s)g s and %(run_s)g - 0.25 s
  (schedstat of the profiler's threads: start-up excluded), over the samples
  delivered per second. The same beyond an idle target's 999 Hz run is in the
  details ("marginal"); the same from whole runs (wait4 rusage, start-up and
  its noise included) is in the details, with the idle run's CPU ("fixed
  cost": BPF load, attach, the poll loop, shutdown). BPF time per sample comes from the program's
  run_time_ns / run_cnt (kernel.bpf_stats_enabled=1 during these runs only),
  the idle run giving the cost of the runs on other tasks; the target pays it.
  "target CPU spent in the BPF program" = that time × the target's samples /
  the target's CPU time while sampled (the same window as achieved): what
  the profiler adds to the target beyond the timer interrupt, exactly, where
  the timed slowdown drowns in this VM's noise.
  achieved = samples delivered / (the target thread's CPU time from the moment
  the sampler is attached on every CPU to pybpfprof's exit × HZ); %(run_s)g s runs
  cover whole +u/-u pairs of the sampler's rate jitter.
- reads: `--stats` of the cost runs: (reads at 9,999 Hz - reads at 999 Hz) /
  (samples at 9,999 Hz - samples at 999 Hz), the same start-up, code-object
  loads and periodic thread scans cancelling out.
- wall: one thread spinning %(depth)d deep plus N threads blocked in
  Event.wait(), `-m wall -F 99 -d %(run_s)g`; the profiler's CPU (schedstat of its
  threads) between %(warm_s)g s and %(run_s)g - 0.25 s, per second. Wakers: 20
  threads %(depth)d deep sleeping 10 ms and 30 ms by turns; in each repetition
  the target's CPU (schedstat) over the same window unprofiled and profiled,
  in rotated order; "tick stacks read" is the share of tick stacks read from
  the target (the rest: reused, kernel samples, switch-out copies).
- host: %(host_procs)d processes (2 spinning, the rest in `time.sleep(0.1)` loops),
  all named `pbpbench` (prctl), %(host_how)s `-F 19 -d %(host_run_s)g`; CPU share between %(host_warm_s)g s and the end
  (- 0.25 s), VmHWM at that point.
- deep: as cost, a process %(deep)d frames deep, 999 Hz.
"""


def report(b, path, missing, wall_s, quick):
    names = [it.name for it in b.interps]
    screen = table(b, [k for k, _ in ROWS], False)
    lines = ["# pybpfprof: what it costs", "",
             "Written by `make bench` (scripts/bench.py%s) in %.0f s. Do not edit by hand "
             "except between the analysis markers." % (" --quick" if quick else "", wall_s), "",
             "## Machine", ""] + machine(b.interps) + [""]
    if missing:
        lines += ["Not measured: %s" % "; ".join("%s (%s)" % m for m in missing), ""]
    lines += ["## Summary", ""] + table(b, [k for k, _ in ROWS], True) + [""]
    lines += ["## Method", "", METHOD % dict(
        guard=GUARD_S, depth=DEPTH, deep=DEEP, chunks=CHUNKS, fast_mode=FAST_MODE, host_how="`-a --comm '^pbpbench$'`" if b.has_all else
        "`-p` with the list of their pids (this build has no `-a`),", **b.cfg)]
    lines += ["## Details", ""] + table(b, DETAIL_KEYS, True) + [""]
    for scen, rows in b.detail.items():
        lines += ["### %s" % scen, "", "| python | runs | |", "|---|---|---|"] + rows + [""]
    fails = [(n, f) for n in names for f in b.figs.get(n, {}).values() if f.verdict() == "FAIL"]
    lines += ["## Misses", ""]
    lines += ["- %s on %s: %s, target %s" % (f.label, n, f.cell(), f.target_text())
              for n, f in fails] or ["None."]
    lines += ["", "## Why", ""]
    lines += [old_analysis(path) or (ANALYSIS_BEGIN + "\n(no analysis yet)\n" + ANALYSIS_END), ""]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines))
    os.rename(path + ".tmp", path)
    return screen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK", "") not in ("", "0"))
    ap.add_argument("--only", default=",".join(SCENARIOS))
    ap.add_argument("--pythons", default="3.11,3.13,3.14")
    ap.add_argument("--results", default=DEFAULT_RESULTS)
    ap.add_argument("--reps", type=int)
    a = ap.parse_args()
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    bad = [s for s in only if s not in SCENARIOS]
    if bad:
        ap.error("unknown scenario(s) %s (of %s)" % (", ".join(bad), ", ".join(SCENARIOS)))
    if os.geteuid() != 0:
        sys.exit("bench: run as root (BPF, chroot, bpf_stats)")
    if not os.access(PBP, os.X_OK):
        sys.exit("bench: %s is not built (make all)" % PBP)
    cfg = dict(QUICK if a.quick else FULL)
    if a.reps:
        cfg.update(reps=a.reps, slow_reps=a.reps, deep_reps=a.reps)
    interps, missing = discover([p.strip() for p in a.pythons.split(",") if p.strip()])
    if not interps:
        sys.exit("bench: no interpreter to measure: %s" % missing)

    def on_term(sig, frame):
        raise KeyboardInterrupt

    # The bench mostly sleeps; when it wakes to read a counter at an instant it
    # must run at once, however busy the two CPUs are. Children start as
    # SCHED_OTHER again (SCHED_RESET_ON_FORK).
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(10))
    except (OSError, AttributeError) as e:
        log("cannot run SCHED_FIFO (%s): instants read late under load" % e)

    signal.signal(signal.SIGTERM, on_term)
    b = Bench(cfg, interps, only)
    t0 = time.monotonic()
    try:
        b.run()
    finally:
        kill_all()
        shutil.rmtree(b.tmp, ignore_errors=True)
    screen = report(b, a.results, missing, time.monotonic() - t0, a.quick)
    print("\n".join(screen))
    print("\n%s written (%s)" % (os.path.relpath(a.results), "quick" if a.quick else "full"))
    fails = sum(1 for n in b.figs for f in b.figs[n].values() if f.verdict() == "FAIL")
    if fails:
        print("%d figure(s) miss their target: see the Why section" % fails)
    return 0


if __name__ == "__main__":
    sys.exit(main())
