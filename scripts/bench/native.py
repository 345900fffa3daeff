"""Scenario native (issue 19): what native frames cost. A target compressing
with zlib (in libz without the GIL nearly all the time) profiled three ways,
at 99 and 999 Hz: without native frames (the default), with the leaf, and with
--native (the kernel copies 8 KiB of stack per sample, user space unwinds
it). Profiler CPU per sample in steady state and BPF time per sample by the
program's own clock, as the cost scenario measures them, but over the
second half of each run: the first sample in a library reads it (once per
library, milliseconds; natbench measures that), which is not a cost per
sample."""

from common import Figure, med
from cost import cost_runs, program_us, steady
from slowdown import calibrate, timed_runs
from targets import kill, spawn

NATIVE_RATES = [99, 999]
WAYS = [("noleaf", "no native frames (the default)", []),
        ("leaf", "--native-leaf", ["--native-leaf"]),
        ("native", "--native", ["--native"]),
        ("fp", "--native=fp", ["--native=fp"])]


def native(bench, it):
    busy, _ = spawn(it, "zlib")
    idle, _ = spawn(it, "idle")
    try:
        for key, label, extra in WAYS:
            runs = cost_runs(bench, it, busy.pid, idle.pid, NATIVE_RATES, bench.cfg["reps"],
                             low=False, extra=extra, warm=bench.cfg["run_s"] / 2)
            for hz in NATIVE_RATES:
                rs = runs[hz]
                bench.add(it, Figure("%s_cost_us@%d" % (key, hz), "profiler CPU/sample in libz, "
                                     "%s, %d Hz" % (label, hz), "µs",
                                     [steady(r) for r in rs], "%.2f"))
                bench.add(it, Figure("%s_prog_us@%d" % (key, hz), "BPF time/sample in libz, "
                                     "%s, %d Hz" % (label, hz), "µs",
                                     [program_us(r) for r in rs], "%.2f"))
            bench.det("native", "| %s | %s | %s |" % (it.name, label, "; ".join(
                "%d Hz: %d delivered" % (hz, int(med([r.s.get("delivered", 0) for r in runs[hz]])))
                for hz in NATIVE_RATES)))
    finally:
        kill(busy)
        kill(idle)
    native_slowdown(bench, it)


# -- what the target pays: a fixed zlib workload timed by the target itself

SLOW_CASES = [None, ("pbp", 99), ("pbp", 99, "--native")]


def native_slowdown(bench, it):
    """The target's own time for a fixed number of compressions (launch
    mode, as the slowdown scenario), unprofiled, profiled at 99 Hz without
    native frames, and with --native: the kernel's stack copy runs in the
    target, on its CPU."""
    iters = calibrate(bench, it, "timedz", probe=100)
    runs = timed_runs(bench, it, iters, SLOW_CASES, "timedz")
    base = runs[None]
    for case, key, label in ((SLOW_CASES[1], "plain", "no native frames"),
                             (SLOW_CASES[2], "native", "--native")):
        bench.add(it, Figure("zslow_%s@99" % key, "slowdown, zlib, %s, 99 Hz" % label, "x",
                             [r["fast"] / b["fast"] for r, b in zip(runs[case], base)], "%.4f"))
    bench.det("native", "| %s | zlib timed: %d compressions; unprofiled %.3f s on CPU | %s |" % (
        it.name, iters, med([b["oncpu"] for b in base]), "; ".join(
            "%s: %.3f s on CPU" % (" ".join(map(str, c[2:])) or "99 Hz",
                                   med([r["oncpu"] for r in runs[c]])) for c in SLOW_CASES[1:])))
