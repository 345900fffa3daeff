"""Scenario wall: -m wall with idle threads, and with threads that wake often."""

import time

from common import DEPTH, WAKERS, WALL_IDLE, Figure, rotate
from kernel import task_cpu_ns
from runs import run_pbp
from targets import kill, spawn


def tick_sources(s):
    """Where tick stacks came from: [reused, from the kernel's sample, the
    kernel's copy at the switch, read at the tick]; None when not known."""
    t = s.get("tick_stacks")
    return [t["reused"], t["from_kernel"], t["from_switch"], t["read_now"]] if t else None


# -- 4. wall mode with idle threads

def wall(bench, it):
    d, w = bench.cfg["run_s"], bench.cfg["warm_s"]
    per = {n: [] for n in WALL_IDLE}
    ticks = {n: [] for n in WALL_IDLE}
    for rep in range(bench.cfg["reps"]):
        for n in rotate(WALL_IDLE, rep):
            proc, rd = spawn(it, "threads", n, DEPTH)
            try:
                r = run_pbp(["-p", proc.pid, "-m", "wall", "-F", 99, "-d", d],
                            bench.out("wall"), window=(w, d - 0.25))
            finally:
                kill(proc)
            per[n].append(r.window_cpu * 1e3 if r.window_cpu is not None else None)
            ticks[n].append(tick_sources(r.s))
    for n in WALL_IDLE:
        bench.add(it, Figure("wall_ms@%d" % n, "wall 99 Hz, %d idle threads: profiler CPU" % n,
                             "ms/s", per[n], "%.2f"))
    ratio = [a / b if a is not None and b else None for a, b in zip(per[WALL_IDLE[-1]],
                                                                   per[WALL_IDLE[0]])]
    bench.add(it, Figure("wall_ratio", "wall: CPU 200 idle / 0 idle", "x", ratio, "%.2f"))
    bench.det("wall", "| %s | %s |" % (it.name, "; ".join(
        "%d idle: tick stacks reused/from kernel/at switch/read %s" % (
            n, "/".join(str(x) for x in (ticks[n][-1] or ["?"]))) for n in WALL_IDLE)))
    wakers(bench, it)


def wakers(bench, it):
    """Threads that wake 50 times a second, 30 deep: the kernel copies each
    stack as the thread goes back to sleep, so ticks read nothing; the
    copies run in the target, so its CPU is measured unprofiled and
    profiled (interleaved, same window)."""
    d, w = bench.cfg["run_s"], bench.cfg["warm_s"]
    prof, base, mine, read = [], [], [], []
    for rep in range(bench.cfg["reps"]):
        proc, rd = spawn(it, "wakers", WAKERS, DEPTH)
        try:
            for case in rotate(["none", "pbp"], rep):
                if case == "none":
                    time.sleep(w)
                    c0, t0 = task_cpu_ns(proc.pid), time.monotonic()
                    time.sleep(d - w - 0.25)
                    c1, t1 = task_cpu_ns(proc.pid), time.monotonic()
                    base.append((c1 - c0) / 1e6 / (t1 - t0))
                    continue
                r = run_pbp(["-p", proc.pid, "-m", "wall", "-F", 99, "-d", d],
                            bench.out("wakers"), window=(w, d - 0.25), window_ref=proc.pid)
                prof.append(r.window_cpu * 1e3 if r.window_cpu is not None else None)
                mine.append(r.window_ref_cpu * 1e3 if r.window_ref_cpu is not None else None)
                t = tick_sources(r.s)
                read.append(100.0 * t[3] / sum(t) if t and sum(t) else None)
        finally:
            kill(proc)
    label = "wall 99 Hz, %d threads waking 50/s, %d deep" % (WAKERS, DEPTH)
    bench.add(it, Figure("wakers_ms", label + ": profiler CPU", "ms/s", prof, "%.2f"))
    bench.add(it, Figure("wakers_read", label + ": tick stacks read", "%", read, "%.1f"))
    ratio = [a / b if a is not None and b else None for a, b in zip(mine, base)]
    bench.add(it, Figure("wakers_target", label + ": target CPU, profiled / not", "x", ratio,
                         "%.3f"))
    bench.det("wall", "| %s | %d wakers: target CPU unprofiled %s ms/s, profiled %s ms/s |" % (
        it.name, WAKERS, "/".join("%.1f" % x for x in base),
        "/".join("%.1f" % x for x in mine if x is not None)))
