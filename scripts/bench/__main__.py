"""What pybpfprof costs, measured: `make bench` (root).

    python3 scripts/bench [--quick] [--only S[,S...]] [--pythons P[,P...]]
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
  pool      a launched parent forking 8 workers spinning 30 deep (every
            process followed, each forked child warm) against one worker, at
            99 Hz: profiler CPU per sample after start-up, and 8 / 1
  top       `pybpfprof top` full-screen in a pseudo-terminal (80x24), 99 Hz, a
            target held 30 deep: its CPU share of one core after start-up and
            per sample, and that over a recording's of the same target
  deep      recursion 500 deep at 999 Hz: profiler CPU per sample, BPF time
            per sample, and the share of stacks finished in user space
  rate      -F 10,000, 20,000 and 50,000 on a busy target: the rate pybpfprof
            ran at (it lowers -F to what the host sustains), the interrupts
            achieved per busy CPU second, samples per second of the target's
            CPU time, and the share of each CPU the BPF program took (--stats)
  kframes   --kernel's cost: a target in system calls (file reads, getrandom)
            in cpu mode without and with --kernel at 99 and 999 Hz: profiler
            CPU per sample and BPF time per sample over the second half of
            each run
  walk      the kernel's frame walk (issue 35): a target held 30 and 300
            deep at 999 Hz, with no option and with --native, --native=fp,
            --kernel, --async and -m wall: BPF time per sample (in the
            target, and by the program's own clock), each option's time over
            the plain run's, the share of frames the walk took from a copy
            of the thread's data stack (3.11+) and the hit rate of its
            code-object cache (3.14+). --pythons 3.14t adds the chroot's
            free-threaded build
  page      once, not per interpreter: the html page of a 50,000-stack
            profile opened in headless Chromium (tests/integration's cdp.py):
            ms to its first painted frame (goal < 2 s), the inverted and
            sandwich views switched to, and its size against the page before
            issue #23's report (goal <= 1.5x)
  agent     once, not per interpreter: `pybpfprof agent --listen` over
            200 idle processes of pyenv 3.6-3.13 (three sleeping threads
            each): its CPU share of one core, RSS per process and reads of
            their memory after discovery; its RSS 60 s after they exit
            against its RSS alone; and over 50 processes (a third busy, a
            third asleep, a third churning threads) pushed every 15 s and
            pulled every 30 s: CPU share and CPU per sample delivered.
            Dated rows kept across runs in RESULTS.md
  native    a target compressing with zlib, at 99 and 999 Hz, without native
            frames, with --native-leaf, --native and --native=fp: profiler
            CPU and BPF time per sample in steady state, and the target's CPU
            in the BPF program at 99 Hz (goal for --native: under 1 %); and a
            fixed zlib workload under 30 Python frames timed by the target
            itself, unprofiled and at 99 Hz without and with --native

Every figure is a ratio or count measured in one run of this script. Cases are
interleaved (each repetition runs every case once, in an order rotated from
one repetition to the next) and reported as the median over the repetitions,
with the spread (min-max). Results go to bench/RESULTS.md; a section of it
between the "analysis" markers is written by hand and kept across runs.

BENCH_QUICK=1 (or --quick): fewer repetitions, shorter runs; a smoke test.
PBP_BIN=path measures another pybpfprof binary (before/after comparisons).
PBP_BEFORE=path: the walk scenario also runs this binary beside PBP_BIN's, on
the same target at the same time, and reports each one's BPF time and their
ratio: a before/after comparison that the machine's drift does not touch.
Python 3 standard library only; run as root (BPF, chroot, bpf_stats).
pybpfprof's figures are read from its --stats=json line, never its wording.

Modules: common (settings, goals, statistics), targets (the target script,
interpreters, processes), kernel (schedstat, BPF run times, perf timers),
runs (running pybpfprof), measure (the scenarios' driver), slowdown, cost,
walkcost, wall, host, page, native, agent (the scenarios), report (RESULTS.md).
"""

import argparse
import os
import shutil
import signal
import sys
import time

from common import DEFAULT_RESULTS, FULL, PBP, QUICK, SCENARIOS, log
from measure import Bench
from report import report
from targets import discover, kill_all


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
    fails += sum(1 for f in b.page_figs + b.agent_figs if f.verdict() == "FAIL")
    if fails:
        print("%d figure(s) miss their target: see the Why section" % fails)
    return 0


if __name__ == "__main__":
    sys.exit(main())
