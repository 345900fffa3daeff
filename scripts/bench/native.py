"""Scenario native (issue 19): what native frames cost. A target compressing
with zlib (in libz without the GIL nearly all the time) profiled four ways,
at 99 and 999 Hz: without native frames (the default), with the leaf, with
--native (the kernel copies 8 KiB of stack per sample, user space unwinds
it) and with --native=fp (the kernel walks frame pointers). Profiler CPU per sample in steady state and BPF time per sample by the
program's own clock, as the cost scenario measures them, but over the
second half of each run: the first sample in a library reads it (once per
library, milliseconds; natbench measures that), which is not a cost per
sample."""

from common import Figure, med
from cost import ways_cost
from slowdown import calibrate, timed_runs

NATIVE_RATES = [99, 999]
WAYS = [("noleaf", "no native frames (the default)", []),
        ("leaf", "--native-leaf", ["--native-leaf"]),
        ("native", "--native", ["--native"]),
        ("fp", "--native=fp", ["--native=fp"])]


def native(bench, it):
    ways_cost(bench, it, "native", "zlib", "libz", NATIVE_RATES, WAYS)
    paid(bench, it)
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


def paid(bench, it):
    """What the target pays at 99 Hz for each way, as a share of its CPU:
    the BPF program runs in the interrupted thread, on its CPU, for its
    measured time per sample, 99 times a CPU second. The bound on the
    target's slowdown that the timed runs (zslow_*) cannot resolve on a VM
    whose speed drifts by more than that between runs."""
    figs = bench.figs.get(it.name, {})
    for key, label, _ in WAYS:
        prog = figs.get("%s_prog_us@99" % key)
        if prog:
            bench.add(it, Figure("%s_paid@99" % key, "target CPU in BPF, %s, 99 Hz" % label, "%",
                                 [v * 99 / 1e4 for v in prog.values], "%.3f"))

