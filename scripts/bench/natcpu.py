"""--native's profiler CPU per sample in steady state, binaries by turns
(issue 35; bench/RESULTS-native.md's method, made a script).

Each run launches `pybpfprof -F 999 -d SECS -o FILE [OPTS] -- python T`
where T compresses with zlib 30 Python frames deep (in libz without the GIL
nearly all the time). Over seconds FROM to TO of the run, the profiler's CPU
(the sum of /proc/PID/task/*/schedstat's first field, ns, all its threads)
is divided by the target's CPU in the same seconds (its threads' schedstat)
x the rate: its samples (on a machine so loaded that the target is not
ready by FROM, from a second after it is). Start-up (the BPF load, the first reads of each
library) is before FROM. The binaries run by turns (A B, B A, A B, ...) so
that the machine's load falls on each alike; medians with min-max, and
each binary's ratio to the first's in the same turn (the load changes
less within a turn than across the series).

Run as root, niced on a shared machine:
  nice -n 19 python3 scripts/bench/natcpu.py --bin before=/tmp/old/build/pybpfprof \
      --bin after=build/pybpfprof --python 3.13=/root/.pyenv/versions/3.13.0/bin/python3 --runs 5
"""

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = r'''
import os, sys, zlib
DATA = bytes(range(256)) * 1024 + os.urandom(1 << 18)
def deep(n):
    if n:
        return deep(n - 1)
    while True:
        zlib.compress(DATA, 6)
open(sys.argv[1], "w").close()
deep(30)
'''


def cpu_ns(pid):
    """CPU time of every thread of pid so far (ns), 0 when it is gone."""
    total = 0
    for path in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def child_of(pid):
    for path in glob.glob("/proc/%d/task/*/children" % pid):
        with open(path) as f:
            kids = f.read().split()
        if kids:
            return int(kids[0])
    return None


def one_run(pbp, py, opts, hz, secs, t_from, t_to, tmp):
    ready = os.path.join(tmp, "ready")
    if os.path.exists(ready):
        os.unlink(ready)
    script = os.path.join(tmp, "target.py")
    with open(script, "w") as f:
        f.write(TARGET)
    out = os.path.join(tmp, "out.txt")
    err = open(os.path.join(tmp, "stderr"), "w")
    t0 = time.monotonic()
    proc = subprocess.Popen([pbp, "-F", str(hz), "-d", str(secs), "-o", out] + opts +
                            ["--", py, script, ready], stdout=subprocess.DEVNULL, stderr=err)
    try:
        # A loaded machine may start it late: the window then opens a second after it is ready.
        while not os.path.exists(ready) and time.monotonic() < t0 + t_to - 2 and proc.poll() is None:
            time.sleep(0.05)
        start = max(t0 + t_from, time.monotonic() + 1.0)
        target = child_of(proc.pid)
        if target is None or start > t0 + t_to - 2:
            return None
        time.sleep(max(0.0, start - time.monotonic()))
        p0, q0, p0_t = cpu_ns(proc.pid), cpu_ns(target), time.monotonic()
        time.sleep(max(0.0, t0 + t_to - time.monotonic()))
        p1, q1, p1_t = cpu_ns(proc.pid), cpu_ns(target), time.monotonic()
        proc.wait(timeout=secs + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    samples = (q1 - q0) / 1e9 * hz
    secs = (p1_t - p0_t)
    return {"us": (p1 - p0) / 1e3 / samples, "target_s": (q1 - q0) / 1e9,
            "prof_ms_s": (p1 - p0) / 1e6 / secs, "samples_s": samples / secs}


def slope(points):
    """Least squares of profiler ms/s over samples/s: (fixed ms/s, ms per
    sample), or None. Under a load that starves the target, the per-second
    costs (the poll loop) over few samples swell the ratio; the slope is
    the cost a sample adds."""
    if len(points) < 3:
        return None
    mx = statistics.mean(x for x, _ in points)
    my = statistics.mean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH, two or more")
    ap.add_argument("--python", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--secs", type=float, default=10)
    ap.add_argument("--from", dest="t_from", type=float, default=3)
    ap.add_argument("--to", dest="t_to", type=float, default=8)
    ap.add_argument("--opts", default="--native", help="pybpfprof's options, one string")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    pys = [p.split("=", 1) for p in a.python]
    res = {(p, b): [] for p, _ in pys for b, _ in bins}
    pairs = {(p, b): [] for p, _ in pys for b, _ in bins[1:]}  # over the first binary, same turn
    rates = {(p, b): [] for p, _ in pys for b, _ in bins}      # (samples/s, profiler ms/s)
    with open("/proc/loadavg") as f:
        print("load at start:", f.read().strip())
    with tempfile.TemporaryDirectory(prefix="pbp-natcpu-") as tmp:
        for i in range(a.runs):
            for pname, py in pys:
                order = bins[i % len(bins):] + bins[:i % len(bins)]
                turn = {}
                for bname, pbp in order:
                    r = one_run(pbp, py, a.opts.split(), a.hz, a.secs, a.t_from, a.t_to, tmp)
                    if r is None:
                        print("run %d %s %s: the target was not ready in time, left out" % (
                            i + 1, pname, bname), flush=True)
                        continue
                    res[(pname, bname)].append(r["us"])
                    rates[(pname, bname)].append((r["samples_s"], r["prof_ms_s"]))
                    turn[bname] = r["us"]
                    print("run %d %s %s: %.2f us/sample (target %.2f s on CPU; %.0f samples/s, "
                          "profiler %.2f ms/s)" % (i + 1, pname, bname, r["us"], r["target_s"],
                                                   r["samples_s"], r["prof_ms_s"]), flush=True)
                for bname, _ in bins[1:]:
                    if bname in turn and bins[0][0] in turn:
                        pairs[(pname, bname)].append(turn[bname] / turn[bins[0][0]])
    with open("/proc/loadavg") as f:
        print("load at end:", f.read().strip())
    for pname, _ in pys:
        for bname, _ in bins:
            v = res[(pname, bname)]
            if not v:
                continue
            print("%s %s: %.1f [%.1f-%.1f] us/sample, %d runs" % (
                pname, bname, statistics.median(v), min(v), max(v), len(v)))
            fit = slope(rates[(pname, bname)])
            if fit:
                print("%s %s: profiler ms/s = %.2f + %.2f us x samples/s (least squares, %d runs)" % (
                    pname, bname, fit[0], fit[1] * 1e3, len(rates[(pname, bname)])))
            q = pairs.get((pname, bname))
            if q:
                print("%s %s / %s in the same turn: %.2f [%.2f-%.2f]" % (
                    pname, bname, bins[0][0], statistics.median(q), min(q), max(q)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
