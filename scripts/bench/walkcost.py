"""Scenario walk (issue 35): what the kernel's frame walk costs the target.
A target held 30 and 300 frames deep, at 999 Hz, without options and with
each option that adds work to the BPF program (--native, --native=fp,
--kernel, --async, -m wall): the BPF program's time per sample, in the
target (bpf_stats, its runs on other tasks taken out as the cost scenario
does) and by the program's own clock; each option's time over the default
run of the same repetition; and how the default walk read its frames (the
share taken from a copy of the thread's data stack, 3.11+) and their code
objects (the kernel cache's hit rate, 3.14+). Ways are
interleaved, as everywhere: a repetition runs each once, in rotated order.

With PBP_BEFORE, every run is two: the binary under test and the "before"
one profile the target at the same time (started in turns, first one and
then the other), each with its own perf events and BPF program, so both
meet the same load, the same speed of the host and the same cache misses;
each one's BPF time per sample is reported and, per repetition, their
ratio, whose median is the before/after figure."""

from common import BEFORE, DEPTH, Figure, med, rotate
from cost import kernel_us, program_us
from kernel import BpfStats
from runs import finish_pbp, start_pbp
from targets import kill, spawn

WALK_DEPTHS = [30, 300]
WAYS = [("plain", "no options", []),
        ("native", "--native", ["--native"]),
        ("fp", "--native=fp", ["--native=fp"]),
        ("kernel", "--kernel", ["--kernel"]),
        ("async", "--async", ["--async"]),
        ("wall", "-m wall", ["-m", "wall"])]
# No options on a target whose frames are distinct functions, each met once: what a
# stack of many code objects costs (hold's recursion meets one object again and again).
DISTINCT = ("distinct", "no options, distinct functions", [])


def walk_runs(bench, pids, reps, run_s):
    """({way key or None: [Run]}, the same for BEFORE or None), None the
    idle-target baseline; pids: each case's target; a way a binary refuses
    gives None runs."""
    cases = list(pids)
    extra = dict((k, x) for k, _, x in WAYS + [DISTINCT])
    runs = dict((c, []) for c in cases)
    before = dict((c, []) for c in cases) if BEFORE else None
    with BpfStats():
        for rep in range(reps):
            for c in rotate(cases, rep):
                pid = pids[c]
                args = ["-p", pid, "-F", 999, "-d", run_s] + (extra.get(c) or [])
                bins = [(runs, None)] + ([(before, BEFORE)] if BEFORE else [])
                started = []
                for into, binary in (bins if rep % 2 == 0 else bins[::-1]):
                    try:
                        started.append((into, start_pbp(args, bench.out("walk"), grab=True,
                                                        binary=binary)))
                    except OSError:
                        started.append((into, None))
                for into, r in started:
                    try:
                        into[c].append(finish_pbp(r) if r else None)
                    except RuntimeError:
                        into[c].append(None)    # a way this interpreter refuses: no figure
    return runs, before


def bulk_share(r):
    w = (r.s.get("kernel_walk") or {}) if r else {}
    n = w.get("bulk_frames", 0) + w.get("frame_reads", 0)
    return 100.0 * w["bulk_frames"] / n if n else None


def code_hits(r):
    w = (r.s.get("kernel_walk") or {}) if r else {}
    n = w.get("code_hits", 0) + w.get("code_misses", 0)
    return 100.0 * w["code_hits"] / n if n else None


def walk(bench, it):
    reps, run_s = bench.cfg["reps"], bench.cfg["walk_run_s"]
    for depth in WALK_DEPTHS:
        busy, _ = spawn(it, "hold", depth)
        idle, _ = spawn(it, "idle")
        distinct = spawn(it, "distinct", depth)[0] if depth == DEPTH else None
        pids = dict([(None, idle.pid)] + [(w[0], busy.pid) for w in WAYS])
        if distinct:
            pids[DISTINCT[0]] = distinct.pid
        try:
            runs, before = walk_runs(bench, pids, reps, run_s)
        finally:
            for p in (busy, idle, distinct):
                if p:
                    kill(p)
        walk_figures(bench, it, depth, runs, before)
        bench.det("walk", "| %s | depth %d | %s |" % (it.name, depth, "; ".join(
            "%s: %d taken" % (label, int(med([r.s.get("taken", 0) for r in runs[key] if r]) or 0))
            for key, label, _ in WAYS)))


def bpf_us(runs):
    """BPF time per sample of each repetition's run of each way: {key: [µs]}."""
    base = runs[None]
    return dict((key, [kernel_us(r, b) if r and b else None for r, b in zip(runs[key], base)])
                for key in runs if key is not None)


def walk_figures(bench, it, depth, runs, before):
    us = bpf_us(runs)
    plain = us["plain"]
    ways = WAYS + ([DISTINCT] if DISTINCT[0] in runs else [])
    for key, label, _ in ways:
        vals = us[key]
        bench.add(it, Figure("walk_%s_us@%d" % (key, depth), "BPF time/sample, depth %d, %s"
                             % (depth, label), "µs", vals, "%.2f"))
        bench.add(it, Figure("walk_%s_prog_us@%d" % (key, depth), "BPF time/sample by the "
                             "program's clock, depth %d, %s" % (depth, label), "µs",
                             [program_us(r) if r else None for r in runs[key]], "%.2f"))
        if key not in ("plain", DISTINCT[0]):
            bench.add(it, Figure("walk_%s_added_us@%d" % (key, depth), "BPF time/sample added "
                                 "by %s, depth %d" % (label, depth), "µs",
                                 [v - p if v is not None and p is not None else None
                                  for v, p in zip(vals, plain)], "%.2f"))
    bench.add(it, Figure("walk_bulk@%d" % depth, "frames read from a data-stack copy, depth %d"
                         % depth, "%", [bulk_share(r) for r in runs["plain"]], "%.1f"))
    for key, label in (("plain", "depth %d" % depth), (DISTINCT[0], "depth %d, distinct" % depth)):
        if key in runs:
            bench.add(it, Figure(("walk_codehit@%d" if key == "plain" else "walk_codehit_distinct@%d")
                                 % depth, "code objects not read (kernel cache, or read earlier in "
                                 "the walk), %s" % label, "%",
                                 [code_hits(r) for r in runs[key]], "%.1f"))
    if before is None:
        return
    was = bpf_us(before)
    for key, label, _ in ways:
        bench.add(it, Figure("walk_%s_before_us@%d" % (key, depth), "BPF time/sample, depth %d, "
                             "%s, before (PBP_BEFORE, side by side)" % (depth, label), "µs",
                             was[key], "%.2f"))
        bench.add(it, Figure("walk_%s_ratio@%d" % (key, depth), "BPF time/sample, depth %d, %s, "
                             "now / before (side by side)" % (depth, label), "x",
                             [n / b if n is not None and b else None
                              for n, b in zip(us[key], was[key])], "%.3f"))
