"""Settings, run lengths, goals, and the statistics every scenario uses."""

import os
import statistics
import sys


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PBP = os.environ.get("PBP_BIN") or os.path.join(REPO, "build", "pybpfprof")
# The walk scenario's "before": another binary run side by side with PBP (both
# sample the same target at once), so the two compare under the same load.
BEFORE = os.environ.get("PBP_BEFORE") or None
DEFAULT_RESULTS = os.path.join(REPO, "bench", "RESULTS.md")
PYENV = os.environ.get("PYENV_ROOT") or "/root/.pyenv"
CHROOT = os.environ.get("PBP_CHROOT", "/var/cache/pybpfprof/sid-chroot").rstrip("/")
SCENARIOS = ["slowdown", "cost", "reads", "wall", "host", "pool", "top", "deep", "rate", "page", "native", "kframes", "walk", "agent"]
ANALYSIS_BEGIN = "<!-- analysis: begin (hand-written, kept across runs) -->"
ANALYSIS_END = "<!-- analysis: end -->"

# Run lengths and repetitions: full, and BENCH_QUICK.
# run_s: 5 s spans two of the sampler's +u/-u rate-jitter pairs (one draw a second
# after the first): the achieved rate over it is not biased by the jitter.
# top_run_s: whole seconds of top's refresh inside the measured window.
# low_run_s: the 99 Hz cost runs and their idle baseline; at 99 Hz a 5 s run
# holds too few samples to tell a few µs per sample from the noise here.
FULL = dict(reps=5, slow_reps=9, deep_reps=5, work_s=2.0, run_s=5.0, low_run_s=15.0,
            warm_s=1.0, host_run_s=6.0, host_warm_s=2.5, host_procs=50, pool_run_s=10.0,
            agent_reps=1, agent_idle_procs=200, agent_busy_procs=50, agent_warm_s=10.0,
            agent_alone_s=120.0, agent_idle_s=300.0, agent_gone_s=60.0, agent_busy_s=120.0,
            top_run_s=15.0, page_reps=5, walk_run_s=4.0)
QUICK = dict(reps=2, slow_reps=2, deep_reps=2, work_s=0.4, run_s=1.2, low_run_s=1.2,
             warm_s=0.5, host_run_s=2.5, host_warm_s=1.2, host_procs=50, pool_run_s=3.0,
             agent_reps=1, agent_idle_procs=40, agent_busy_procs=15, agent_warm_s=5.0,
             agent_alone_s=20.0, agent_idle_s=30.0, agent_gone_s=20.0, agent_busy_s=35.0,
             top_run_s=4.0, page_reps=1, walk_run_s=1.5)

RATES = [99, 999, 9999]
HIGH_RATES = [10000, 20000, 50000]
TIMER_RATES = [999, 9999]
DEPTH = 30
DEEP = 500
WALL_IDLE = [0, 50, 200]
WAKERS = 20
HOST_COMM = "pbpbench"
POOL = 8               # fork workers of the pool scenario
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
    "pool_ratio": ("<=", 1.5),
    "top_core_pct": ("<", 1.0),
    "page_open_ms": ("<", 2000.0),
    "page_size_ratio": ("<=", 1.5),
    "native_paid@99": ("<", 1.0),
    "agent_base_mb": ("<=", 48.0),
    "agent_idle_pct": ("<=", 0.1),
    "agent_idle_reads": ("<=", 0.0),
    "agent_idle_kb": ("<=", 64.0),
    "agent_gone_pct": ("<=", 10.0),
    "agent_busy_pct": ("<=", 0.25),
    "agent_busy_us": ("<=", 10.0),
    "agent_busy_marg_us": ("<=", 10.0),
}


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


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
