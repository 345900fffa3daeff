"""Scenario slowdown: the workload timed by the target itself, unprofiled,
profiled, and under bare perf timers."""

import json
import os
import subprocess

from common import (CHUNKS, DEPTH, GUARD_S, RATES, TIMER_RATES, Figure, fast_mode, med,
                    rotate)
from kernel import timer_events
from runs import run_pbp
from targets import pdeathsig


# -- 1. slowdown and achieved rate (launch mode)

def timed(bench, it, iters, case, work="timed"):
    """One run of the workload: case None (unprofiled), ("pbp", HZ, OPTION...)
    or ("timer", HZ): bare cpu-clock perf events at HZ on every CPU, no BPF
    program, the floor any timer-driven sampler pays on this machine. work:
    "timed" (pure Python, DEPTH deep) or "timedz" (zlib under DEPTH frames)."""
    host, inside = it.files("result")
    cmd = it.cmd(work, DEPTH, iters, inside, GUARD_S, CHUNKS)
    if case is None or case[0] == "timer":
        fds = timer_events(case[1]) if case else []
        try:
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, preexec_fn=pdeathsig,
                           timeout=600)
        finally:
            for fd in fds:
                os.close(fd)
    else:
        run_pbp(["-F", case[1]] + list(case[2:]) + ["--"] + cmd, bench.out("slow"))
    with open(host) as f:
        res = json.load(f)
    res["oncpu"] = res["wall"] - res["delay"]
    return res


def calibrate(bench, it, work="timed", probe=300):
    for _ in range(3):
        took = min(timed(bench, it, probe, None, work)["oncpu"] for _ in range(2))
        if took > 0.2:
            break
        probe = int(probe * 0.25 / took)
    return max(10, int(probe * bench.cfg["work_s"] / took))


def timed_runs(bench, it, iters, cases, work="timed"):
    """Every case once a repetition, in rotated order; each run's fast time."""
    runs = {c: [] for c in cases}
    for rep in range(bench.cfg["slow_reps"]):
        for c in rotate(cases, rep):
            runs[c].append(timed(bench, it, iters, c, work))
    for case in cases:
        fast_mode(runs[case])
    return runs


def slowdown(bench, it):
    iters = calibrate(bench, it)
    cases = [None] + [("pbp", hz) for hz in RATES] + [("timer", hz) for hz in TIMER_RATES]
    runs = timed_runs(bench, it, iters, cases)
    base = runs[None]

    def ratios(case, key):
        return [r[key] / b[key] if r[key] is not None and b[key] is not None else None
                for r, b in zip(runs[case], base)]

    for hz in RATES:
        bench.add(it, Figure("slowdown@%d" % hz, "slowdown, cpu mode, %d Hz" % hz, "x",
                             ratios(("pbp", hz), "fast"), "%.4f"))
        bench.add(it, Figure("oncpuslow@%d" % hz, "slowdown, whole on-CPU time, %d Hz" % hz,
                             "x", ratios(("pbp", hz), "oncpu"), "%.4f"))
        bench.add(it, Figure("wallslow@%d" % hz, "slowdown by wall clock, %d Hz" % hz, "x",
                             ratios(("pbp", hz), "wall"), "%.4f"))
        bench.add(it, Figure("minslow@%d" % hz, "slowdown, fastest run / fastest, %d Hz" % hz,
                             "x", [min(r["oncpu"] for r in runs[("pbp", hz)]) /
                                   min(b["oncpu"] for b in base)], "%.4f"))
    for hz in TIMER_RATES:
        bench.add(it, Figure("timer@%d" % hz, "floor: bare perf timer, no BPF, %d Hz" % hz,
                             "x", ratios(("timer", hz), "fast"), "%.4f"))
        bench.add(it, Figure("excess@%d" % hz, "slowdown / floor, %d Hz" % hz, "x",
                             [a / b if a and b else None for a, b in zip(
                                 ratios(("pbp", hz), "fast"), ratios(("timer", hz), "fast"))],
                             "%.4f"))
    bench.add(it, Figure("fastshare", "pieces in the fast mode, unprofiled", "%",
                         [r["fastshare"] * 100 for r in base], "%.0f"))
    bench.det("slowdown", "| %s | %d iterations; unprofiled: %.3f s on CPU, %.3f s wall "
              "(medians) | %s |" % (
                  it.name, iters, med([b["oncpu"] for b in base]), med([b["wall"] for b in base]),
                  "; ".join("%s %d Hz: %.3f s on CPU" % (c[0], c[1], med([r["oncpu"] for r in runs[c]]))
                           for c in cases[1:])))
