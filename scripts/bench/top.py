"""Scenario top: `pybpfprof top` refreshing its full screen every second,
in a pseudo-terminal, against a target held DEPTH frames deep at 99 Hz; the
same run recorded, in the same repetition, for comparison."""

import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading
import time

from common import DEPTH, PBP, Figure, rotate
from cost import steady
from kernel import task_cpu_ns
from runs import run_pbp
from targets import kill, pdeathsig, spawn

HZ = 99


def drain(fd):
    """Read the screen's bytes as a terminal would, until top closes it."""
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def collapsed_samples(path):
    with open(path) as f:
        return sum(int(line.rsplit(" ", 1)[1]) for line in f if line.strip())


def run_top(pid, secs, window, out):
    """(top's CPU share of one core between window[0] and window[1] s after
    its start, samples per second over the run from its -o profile); top
    full-screen on an 80x24 pseudo-terminal that is read as it is written."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    with open(out + ".err", "w") as err:
        p = subprocess.Popen([PBP, "top", "-p", str(pid), "-F", str(HZ), "-d", str(secs), "-o", out],
                             stdin=slave, stdout=slave, stderr=err, env=env, preexec_fn=pdeathsig)
    os.close(slave)
    reader = threading.Thread(target=drain, args=(master,), daemon=True)
    reader.start()
    t0 = time.monotonic()
    time.sleep(max(0.0, t0 + window[0] - time.monotonic()))
    c0, ta = task_cpu_ns(p.pid), time.monotonic()
    time.sleep(max(0.0, t0 + window[1] - time.monotonic()))
    c1, tb = task_cpu_ns(p.pid), time.monotonic()
    rc = p.wait(timeout=secs + 60)
    reader.join(timeout=10)
    os.close(master)
    if rc != 0:
        with open(out + ".err") as f:
            raise RuntimeError("pybpfprof top exited %d:\n%s" % (rc, f.read()[-2000:]))
    cpu = (c1 - c0) / 1e9 / (tb - ta) if c0 is not None and c1 is not None else None
    return cpu, collapsed_samples(out) / secs


def top(bench, it):
    """Per repetition, in rotated order: `pybpfprof top` (full screen, 99 Hz,
    refreshed every second, no key pressed) and `pybpfprof -F 99`
    recording the same target. Figures: top's CPU share of one core after
    start-up, its CPU per sample, and that over the recording's."""
    d, w = bench.cfg["top_run_s"], bench.cfg["warm_s"]
    busy, _ = spawn(it, "hold", DEPTH)
    core, us, rec = [], [], []
    try:
        for rep in range(bench.cfg["reps"]):
            for case in rotate(["top", "record"], rep):
                if case == "top":
                    cpu, rate = run_top(busy.pid, d, (w, d - 0.25), bench.out("top"))
                    core.append(cpu * 100 if cpu is not None else None)
                    us.append(cpu / rate * 1e6 if cpu is not None and rate else None)
                else:
                    r = run_pbp(["-p", busy.pid, "-F", HZ, "-d", d], bench.out("top-record"),
                                window=(w, d - 0.25))
                    rec.append(steady(r))
    finally:
        kill(busy)
    bench.add(it, Figure("top_core_pct", "top, full screen, 99 Hz, %d deep: profiler CPU, share of "
                         "one core" % DEPTH, "%", core, "%.2f"))
    bench.add(it, Figure("top_us", "top, full screen, 99 Hz: profiler CPU per sample", "µs", us, "%.1f"))
    ratios = [a / b for a, b in zip(us, rec) if a and b]
    bench.add(it, Figure("top_ratio", "top / recording at 99 Hz: profiler CPU per sample", "x",
                         ratios, "%.2f"))
    bench.det("top", "| %s | per sample, top %s µs, recording %s µs |" % (
        it.name, "/".join("%.1f" % v for v in us if v), "/".join("%.1f" % v for v in rec if v)))
