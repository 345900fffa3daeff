"""bench/RESULTS.md and the one-screen table."""

import os
import platform
import subprocess
import time

from common import (ANALYSIS_BEGIN, ANALYSIS_END, CHUNKS, DEEP, DEPTH, FAST_MODE, GUARD_S,
                    HIGH_RATES, PBP, POOL, REPO)


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
    ("pool_us@1", "pool"), ("pool_us@%d" % POOL, "pool"), ("pool_ratio", "pool"),
    ("top_core_pct", "top"), ("top_us", "top"), ("top_ratio", "top"),
    ("deep_cost_us", "deep"), ("deep_kernel_us", "deep"), ("deep_completed", "deep"),
] + [("rate_%s@%d" % (k, hz), "rate") for hz in HIGH_RATES
     for k in ("ran", "irq", "achieved", "share")] + [
    ("%s_%s@%d" % (way, k, hz), "native") for way in ("noleaf", "leaf", "native", "fp")
    for k in ("cost_us", "prog_us") for hz in (99, 999)] + [
    ("zslow_plain@99", "native"), ("zslow_native@99", "native")] + [
    ("%s_paid@99" % way, "native") for way in ("noleaf", "native", "fp")] + [
    ("%s_%s@%d" % (way, k, hz), "kframes") for way in ("nokernel", "kernel")
    for k in ("cost_us", "prog_us") for hz in (99, 999)] + [
    (k % d, "walk") for d in (30, 300) for k in (
        "walk_plain_us@%d", "walk_bulk@%d", "walk_codehit@%d", "walk_native_added_us@%d", "walk_fp_added_us@%d",
        "walk_kernel_added_us@%d", "walk_async_added_us@%d", "walk_wall_added_us@%d",
        "walk_plain_before_us@%d", "walk_plain_ratio@%d", "walk_distinct_us@%d",
        "walk_codehit_distinct@%d", "walk_distinct_ratio@%d")]
DETAIL_KEYS = [
    "oncpuslow@99", "oncpuslow@999", "oncpuslow@9999", "fastshare",
    "minslow@99", "minslow@999", "minslow@9999",
    "wallslow@99", "wallslow@999", "wallslow@9999", "excess@999", "excess@9999", "fixed_ms",
    "loop_ms",
    "marginal_us@99", "marginal_us@999", "marginal_us@9999",
    "rusage_us@99", "rusage_us@999", "rusage_us@9999",
    "total_us@99", "total_us@999", "total_us@9999", "kernel_us@99", "kernel_us@9999",
    "prog_us@99", "prog_us@999", "prog_us@9999",
    "lost@99", "lost@999", "lost@9999",
    "bytes_steady", "reads_999", "deep_reads",
] + ["walk_%s_%s@%d" % (w, k, d) for d in (30, 300) for w in ("plain", "native", "fp", "kernel",
                                                                 "async", "wall", "distinct")
     for k in ("us", "prog_us", "before_us", "ratio")]


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


def page_table(b, markdown, figs=None):
    """The page (or agent) scenario's figures: one column, since they are not per interpreter."""
    head = ["figure (median [min–max])", "value", "target"] + (["pass/fail"] if markdown else [])
    rows = []
    for f in b.page_figs if figs is None else figs:
        v = f.verdict()
        rows.append([f.label + (" (%s)" % f.unit if f.unit and f.unit != "x" else ""),
                     f.cell() + (" " + v if v and not markdown else ""), f.target_text()]
                    + ([v or "-"] if markdown else []))
    if markdown:
        return (["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
                + ["| " + " | ".join(r) + " |" for r in rows])
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
            "chroot %s %s, own /proc in a private mount namespace" % (i.root, i.chroot_py))
            for i in interps),
        "- pybpfprof: %s, tree %s" % (ver or "?", git),
        "- kernel.perf_event_max_sample_rate: %s; perf_cpu_time_max_percent: %s" % (
            sysctl("perf_event_max_sample_rate"), sysctl("perf_cpu_time_max_percent")),
    ]


AGENT_HEAD_START = "| date | versions | alone RSS MB | alone CPU % |"
AGENT_HEAD = ("| date | versions | alone RSS MB | alone CPU % | idle CPU % | idle reads | idle KB/process | "
              "RSS after exit % | busy CPU % | busy µs/sample | over alone µs/sample | "
              "µs/sample by stage: discovery/labels/naming/slices/pprof/gzip/http/other | load |")
AGENT_COLS = AGENT_HEAD.count("|") - 1


def agent_rows(path, new):
    """The agent scenario's dated rows: those of earlier runs kept (a column
    they predate as "-" before their load), this run's added."""
    rows = []
    try:
        with open(path) as f:
            text = f.read()
        i = text.find(AGENT_HEAD_START)
        if i >= 0:
            for line in text[i:].splitlines()[2:]:
                if not line.startswith("| 2"):
                    break
                cells = line.strip().strip("|").split("|")
                cells[-1:-1] = [" - "] * (AGENT_COLS - len(cells))
                rows.append("|" + "|".join(cells) + "|")
    except OSError:
        pass
    return rows + ([new] if new else [])


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
- cost: `pybpfprof -p PID -F HZ -d %(run_s)g` (%(low_run_s)g s at 99 Hz and for the
  idle baseline) against a process that
  recursed %(depth)d deep and stays there: all of the profiler's CPU (its poll
  loop and rescans included) per second between %(warm_s)g s and %(run_s)g - 0.25 s
  (schedstat of the profiler's threads: start-up excluded), over the samples
  delivered per second. The same beyond an idle target's 999 Hz run is in the
  details ("marginal"); the same from whole runs (wait4 rusage, start-up and
  its noise included) is in the details, with the idle run's CPU ("fixed
  cost": BPF load, attach, the poll loop, shutdown). BPF time per sample is the
  program's run_time_ns (timed by the kernel through BPF_ENABLE_STATS during
  these runs only) less its runs on other tasks, each at the idle run's
  run_time_ns / run_cnt, over the runs on the target's thread (`taken`); a
  run whose run_cnt is below the runs the program counted itself is left out
  (the timing was off for part of it). The target pays it. The same by the
  program's own clock (`program_ns` / `taken`) is in the details.
  "target CPU spent in the BPF program" = that time × the target's samples /
  the target's CPU time while sampled (the same window as achieved): what
  the profiler adds to the target beyond the timer interrupt, exactly, where
  the timed slowdown drowns in this VM's noise.
  achieved = samples delivered / (the target thread's CPU time from the moment
  the sampler is attached on every CPU to pybpfprof's exit × HZ); %(run_s)g s runs
  cover whole +u/-u pairs of the sampler's rate jitter.
- reads: the cost runs' `--stats=json`: (reads at 9,999 Hz - reads at 999 Hz) /
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
- top: `pybpfprof top -p PID -F 99 -d %(top_run_s)g -o FILE` full-screen on an 80x24
  pseudo-terminal (TERM=xterm-256color, read as it is written: the screen's
  refresh every second, a look for keys at least every second), against the cost
  scenario's process %(depth)d deep; its CPU (schedstat) between %(warm_s)g s and the end
  (- 0.25 s), as a share of one core and over the samples per second (from
  the -o profile); "top / recording" divides that by a recording's (`-F 99
  -d %(top_run_s)g`, the same window) in the same repetition.
- deep: as cost, a process %(deep)d frames deep, 999 Hz.
- page (once, not per interpreter): the html page `pybpfprof convert` writes
  for tests/integration/bigprofile.py's 50,000 distinct stacks (3 processes,
  24 threads, 3000 functions in 300 files, depth 3-60), opened %(page_reps)d times
  in headless Chromium (cdp.py), each in a new tab after one unmeasured open
  that warms the browser up; the page times itself (pbp.timings: ms from
  navigation start to its first painted frame, to its JSON parsed, and from
  there to its call tree built). In the last tab the table's top function is
  selected, the inverted view switched to and back, and the sandwich view
  switched to, each timed from the click to the next painted frame. The file
  is compared with the page the same profile made before issue #23's report
  (its budget: 1.5 times that).
"""


def report(b, path, missing, wall_s, quick):
    names = [it.name for it in b.interps]
    screen = table(b, [k for k, _ in ROWS], False) if b.figs else []
    lines = ["# pybpfprof: what it costs", "",
             "Written by `make bench` (scripts/bench%s) in %.0f s. Do not edit by hand "
             "except between the analysis markers." % (" --quick" if quick else "", wall_s), "",
             "## Machine", ""] + machine(b.interps) + [""]
    if missing:
        lines += ["Not measured: %s" % "; ".join("%s (%s)" % m for m in missing), ""]
    lines += ["## Summary", ""] + table(b, [k for k, _ in ROWS], True) + [""]
    if b.page_figs:
        lines += ["## The html report (once, not per interpreter)", ""] + page_table(b, True) + [""]
        screen = screen + ([""] if screen else []) + page_table(b, False)
    dated = agent_rows(path, b.agent_row)
    if b.agent_figs:
        lines += ["## The node agent (once, pyenv 3.6-3.13 side by side)", ""] + \
            page_table(b, True, b.agent_figs) + [""]
        screen = screen + ([""] if screen else []) + page_table(b, False, b.agent_figs)
    if dated:
        lines += ["### The node agent, dated rows (kept across runs)", "", AGENT_HEAD,
                  "|" + "---|" * AGENT_COLS] + dated + [""]
    lines += ["## Method", "", METHOD % dict(
        guard=GUARD_S, depth=DEPTH, deep=DEEP, chunks=CHUNKS, fast_mode=FAST_MODE, host_how="`-a --comm '^pbpbench$'`" if b.has_all else
        "`-p` with the list of their pids (this build has no `-a`),", **b.cfg)]
    lines += ["## Details", ""] + table(b, DETAIL_KEYS, True) + [""]
    for scen, rows in b.detail.items():
        lines += ["### %s" % scen, "", "| python | runs | |", "|---|---|---|"] + rows + [""]
    fails = [(n, f) for n in names for f in b.figs.get(n, {}).values() if f.verdict() == "FAIL"]
    fails += [("the html report", f) for f in b.page_figs if f.verdict() == "FAIL"]
    fails += [("the node agent", f) for f in b.agent_figs if f.verdict() == "FAIL"]
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
