"""Scenario pool: following subprocesses, a launched pool of fork workers
against a single worker, profiler CPU per sample at 99 Hz."""

from common import DEPTH, POOL, Figure, rotate
from cost import steady
from runs import run_pbp


def pool(bench, it):
    """`pybpfprof -F 99 -- python target.py pool N`: the parent forks N
    workers spinning DEPTH deep for pool_run_s, each followed warm (its
    parent's layout and code objects); the run ends with the command. Per
    sample: all of pybpfprof's CPU per second after start-up over the
    samples per second, for N = 1 and N = POOL."""
    d, w = bench.cfg["pool_run_s"], bench.cfg["warm_s"] + 1.0
    us = {1: [], POOL: []}
    for rep in range(bench.cfg["reps"]):
        for n in rotate([1, POOL], rep):
            _, inside = it.files("pool")
            r = run_pbp(["-F", 99, "--"] + it.cmd("pool", n, DEPTH, d, inside),
                        bench.out("pool"), window=(w, d - 0.5), timeout=d + 60)
            us[n].append(steady(r))
    for n in (1, POOL):
        bench.add(it, Figure("pool_us@%d" % n, "launched pool of %d fork worker%s, 99 Hz: "
                             "profiler CPU per sample" % (n, "s" if n > 1 else ""), "µs",
                             us[n], "%.1f"))
    ratios = [a / b for a, b in zip(us[POOL], us[1]) if a and b]
    bench.add(it, Figure("pool_ratio", "pool of %d / 1: profiler CPU per sample" % POOL, "x",
                         ratios, "%.2f"))
    bench.det("pool", "| %s | per sample, 1 worker %s µs, %d workers %s µs |" % (
        it.name, "/".join("%.1f" % v for v in us[1] if v),
        POOL, "/".join("%.1f" % v for v in us[POOL] if v)))
