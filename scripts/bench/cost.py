"""Scenarios cost, reads and deep: the profiler's CPU and the BPF program's
time per sample, remote reads per sample (-p on a target held deep)."""

from common import DEEP, DEPTH, RATES, Figure, med, rotate
from kernel import BpfStats
from runs import proc_sum, run_pbp
from targets import kill, spawn


# -- 2, 3 and 6: profiler cost per sample, reads per sample (-p)

def cost_runs(bench, it, busy, idle, rates, reps, low=True, extra=(), warm=None):
    """{hz or None: [Run]} with None the idle-target baseline; low: the
    99 Hz runs and the baseline last low_run_s; extra: more options; warm:
    seconds before the measured window (default warm_s)."""
    cases = [None] + rates
    runs = {c: [] for c in cases}
    w = bench.cfg["warm_s"] if warm is None else warm
    with BpfStats():
        for rep in range(reps):
            for c in rotate(cases, rep):
                pid = idle if c is None else busy
                hz = 999 if c is None else c
                d = bench.cfg["low_run_s"] if low and c in (None, 99) else bench.cfg["run_s"]
                runs[c].append(run_pbp(["-p", pid, "-F", hz, "-d", d] + list(extra),
                                       bench.out("cost"), grab=True, ref=pid,
                                       window=(w, d - 0.25)))
    return runs


def steady(run):
    """Profiler CPU per sample in steady state, µs: all its CPU per second
    after start-up (the poll loop, rescans and every other fixed cost
    included) over the samples delivered per second."""
    n, secs = run.s.get("delivered"), run.s.get("seconds")
    if not n or not secs or run.window_cpu is None:
        return None
    return run.window_cpu / (n / secs) * 1e6


def marginal(run, base):
    """Profiler CPU per sample in steady state, µs: its CPU per second
    after start-up beyond the idle run's, over the samples per second."""
    n, secs = run.s.get("delivered"), run.s.get("seconds")
    if not n or not secs or run.window_cpu is None or base.window_cpu is None:
        return None
    return (run.window_cpu - base.window_cpu) / (n / secs) * 1e6


def marginal_total(run, base):
    """The same from whole runs (wait4 rusage): start-up noise included."""
    n = run.s.get("delivered") or 0
    return (run.cpu - base.cpu) / n * 1e6 if n else None


def timed_whole(run):
    """The kernel timed every run of the program: its run_cnt is at least the
    runs the program counted itself ("fired"). Less means the timing was off
    for part of the run, and run_time_ns would be divided by too many samples."""
    return run.bpf and run.s.get("fired") is not None and run.bpf[1] >= run.s["fired"]


def kernel_us(run, base):
    """BPF program time per target sample, µs: all the program's run time
    (kernel.bpf_stats: run_time_ns) less its runs on other tasks, each at
    the cost of a run in the idle baseline (every CPU's event runs the
    program, which returns at once for a task it does not profile), over
    the runs on a target's thread ("taken"). Dividing all of run_time_ns by
    the target's samples instead would charge it the other CPUs' runs too."""
    if not timed_whole(run) or not timed_whole(base) or not base.bpf[1] or not run.s.get("taken"):
        return None
    other = base.bpf[0] / base.bpf[1]
    taken = run.s["taken"]
    return (run.bpf[0] - (run.bpf[1] - taken) * other) / taken / 1e3


def program_us(run):
    """The same by the program's own clock (program_ns: its stack walks,
    from after the target lookup to the record's output) over "taken": a
    check on kernel_us, lower by the lookup, the entry and the kernel's timing."""
    n = run.s.get("taken")
    return run.s["program_ns"] / n / 1e3 if n and "program_ns" in run.s else None


def bpf_share(run, base):
    """% of the target's CPU time, while sampled, spent in the BPF program
    on its own samples: what the profiler adds to it beyond the timer
    interrupt every sampler pays."""
    us = kernel_us(run, base)
    if us is None or not run.ref_cpu:
        return None
    return 100.0 * us * run.s["taken"] / 1e6 / run.ref_cpu


def ways_cost(bench, it, scenario, target, where, rates, ways):
    """Profiler CPU and BPF time per sample on a busy target (spawned as
    target, "in WHERE" in the labels), each way (key, label, options) at
    each rate, over the second half of each run: a way's first samples read
    what it names once (a library, a kernel stack), not a cost per sample."""
    busy, _ = spawn(it, target)
    idle, _ = spawn(it, "idle")
    try:
        for key, label, extra in ways:
            runs = cost_runs(bench, it, busy.pid, idle.pid, rates, bench.cfg["reps"],
                             low=False, extra=extra, warm=bench.cfg["run_s"] / 2)
            for hz in rates:
                rs = runs[hz]
                bench.add(it, Figure("%s_cost_us@%d" % (key, hz), "profiler CPU/sample in "
                                     "%s, %s, %d Hz" % (where, label, hz), "µs",
                                     [steady(r) for r in rs], "%.2f"))
                bench.add(it, Figure("%s_prog_us@%d" % (key, hz), "BPF time/sample in "
                                     "%s, %s, %d Hz" % (where, label, hz), "µs",
                                     [program_us(r) for r in rs], "%.2f"))
            bench.det(scenario, "| %s | %s | %s |" % (it.name, label, "; ".join(
                "%d Hz: %d delivered" % (hz, int(med([r.s.get("delivered", 0) for r in runs[hz]])))
                for hz in rates)))
    finally:
        kill(busy)
        kill(idle)


def cost(bench, it):
    busy, _ = spawn(it, "hold", DEPTH)
    idle, _ = spawn(it, "idle")
    try:
        runs = cost_runs(bench, it, busy.pid, idle.pid, RATES, bench.cfg["reps"])
    finally:
        kill(busy)
        kill(idle)
    base = runs[None]
    bench.add(it, Figure("fixed_ms", "fixed cost (idle target, %g s run)" % bench.cfg["low_run_s"],
                         "ms", [b.cpu * 1e3 for b in base], "%.1f"))
    bench.add(it, Figure("loop_ms", "poll loop, idle target", "ms/s",
                         [b.window_cpu * 1e3 if b.window_cpu is not None else None
                         for b in base], "%.2f"))
    for hz in RATES:
        rs = runs[hz]
        bench.add(it, Figure("cost_us@%d" % hz, "profiler CPU/sample, %d Hz" % hz, "µs",
                             [steady(r) for r in rs], "%.2f"))
        bench.add(it, Figure("marginal_us@%d" % hz, "profiler CPU/sample beyond an idle "
                             "target's 999 Hz run, %d Hz" % hz, "µs",
                             [marginal(r, b) for r, b in zip(rs, base)], "%.2f"))
        bench.add(it, Figure("rusage_us@%d" % hz, "profiler CPU/sample, whole runs (rusage), %d Hz" % hz,
                             "µs", [marginal_total(r, b) for r, b in zip(rs, base)], "%.2f"))
        bench.add(it, Figure("total_us@%d" % hz, "profiler CPU/sample incl. fixed, %d Hz" % hz,
                             "µs", [r.cpu / r.s["delivered"] * 1e6 if r.s.get("delivered") else None
                                   for r in rs], "%.1f"))
        bench.add(it, Figure("kernel_us@%d" % hz, "BPF time/sample (in target), %d Hz" % hz,
                             "µs", [kernel_us(r, b) for r, b in zip(rs, base)], "%.2f"))
        bench.add(it, Figure("prog_us@%d" % hz, "BPF time/sample by the program's own clock, "
                             "%d Hz" % hz, "µs", [program_us(r) for r in rs], "%.2f"))
        bench.add(it, Figure("bpf_share@%d" % hz, "target CPU spent in the BPF program, "
                             "%d Hz" % hz, "%", [bpf_share(r, b) for r, b in zip(rs, base)],
                             "%.3f"))
        # Of the rate the run sampled at: above 1000 Hz pybpfprof may lower
        # -F to what the host sustains; the rate scenario reports that.
        bench.add(it, Figure("achieved@%d" % hz, "achieved rate, %d Hz" % hz, "",
                             [r.s["delivered"] / (r.ref_cpu * r.s.get("hz", hz))
                             if r.ref_cpu and r.s.get("delivered") is not None else None
                             for r in rs], "%.4f"))
        bench.add(it, Figure("lost@%d" % hz, "lost samples, %d Hz" % hz, "",
                             [r.s.get("lost") for r in rs], "%d"))
    reads(bench, it, runs)
    bench.det("cost", "| %s | idle run %.1f ms CPU | %s |" % (
        it.name, med([b.cpu * 1e3 for b in base]),
        "; ".join("%d Hz: %d delivered, %.1f ms CPU" % (
            hz, int(med([r.s.get("delivered", 0) for r in runs[hz]])),
            med([r.cpu * 1e3 for r in runs[hz]])) for hz in RATES)))


def reads(bench, it, runs):
    lo, hi = runs[999], runs[9999]      # runs of the same length
    steady, sbytes = [], []
    for a, b in zip(lo, hi):
        dn = b.s.get("delivered", 0) - a.s.get("delivered", 0)
        if dn > 0 and a.s.get("processes") and b.s.get("processes"):
            steady.append((proc_sum(b.s, "reads") - proc_sum(a.s, "reads")) / dn)
            sbytes.append((proc_sum(b.s, "read_bytes") - proc_sum(a.s, "read_bytes")) / dn)
    bench.add(it, Figure("reads_steady", "remote reads/sample, steady state", "",
                         steady, "%.3f"))
    bench.add(it, Figure("bytes_steady", "remote bytes/sample, steady state", "B",
                         sbytes, "%.1f"))
    mid = runs[999]

    def rate(key, r):
        hits, misses = proc_sum(r.s, key + "_hits"), proc_sum(r.s, key + "_misses")
        return 100.0 * hits / (hits + misses) if hits is not None and hits + misses else None

    bench.add(it, Figure("reads_999", "remote reads/sample, whole 999 Hz run", "",
                         [proc_sum(r.s, "reads") / r.s["delivered"] if r.s.get("delivered") and
                          r.s.get("processes") else None for r in mid], "%.3f"))
    bench.add(it, Figure("page_hit", "page cache hit rate, 999 Hz", "%",
                         [rate("page", r) for r in mid], "%.1f"))
    bench.add(it, Figure("code_hit", "code-object cache hit rate, 999 Hz", "%",
                         [rate("code", r) for r in mid], "%.3f"))


def deep(bench, it):
    busy, _ = spawn(it, "hold", DEEP)
    idle, _ = spawn(it, "idle")
    try:
        runs = cost_runs(bench, it, busy.pid, idle.pid, [999], bench.cfg["deep_reps"], low=False)
    finally:
        kill(busy)
        kill(idle)
    base, rs = runs[None], runs[999]
    bench.add(it, Figure("deep_cost_us", "deep 500: profiler CPU/sample, 999 Hz", "µs",
                         [steady(r) for r in rs], "%.1f"))
    bench.add(it, Figure("deep_kernel_us", "deep 500: BPF time/sample", "µs",
                         [kernel_us(r, b) for r, b in zip(rs, base)], "%.2f"))
    bench.add(it, Figure("deep_completed", "deep 500: stacks finished in user space", "%",
                         [100.0 * r.s["completed"] / r.s["delivered"]
                         if r.s.get("delivered") else None for r in rs], "%.1f"))
    bench.add(it, Figure("deep_reads", "deep 500: remote reads/sample", "",
                         [proc_sum(r.s, "reads") / r.s["delivered"] if r.s.get("delivered") and
                          r.s.get("processes") else None for r in rs], "%.2f"))
    bench.det("deep", "| %s | %s |" % (it.name, "; ".join(
        "%d delivered, %d truncated, %d completed, %d failed, %.1f ms CPU (idle %.1f)" % (
            r.s.get("delivered", 0), r.s.get("truncated", 0), r.s.get("completed", 0),
            r.s.get("failed", 0), r.cpu * 1e3, b.cpu * 1e3) for r, b in zip(rs, base))))
