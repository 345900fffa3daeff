"""Scenarios host (-a over 50 processes) and rate (-F beyond what the host
sustains)."""

from common import DEPTH, HIGH_RATES, HOST_COMM, Figure, rotate
from runs import run_pbp
from targets import kill, spawn


# -- 5. a whole host

def host(bench, it):
    n = bench.cfg["host_procs"]
    procs = []
    try:
        env = {"PBP_BENCH_COMM": HOST_COMM}
        for i in range(n):
            procs.append(spawn(it, "spin", DEPTH, env=env)[0] if i < 2 else
                         spawn(it, "sleeploop", env=env)[0])
        pids = [p.pid for p in procs]
        if bench.has_all:
            # Every process of the host would include other people's: the
            # bench's 50 are told apart by their comm.
            args, how = ["-a", "--comm", "^%s$" % HOST_COMM, "-F", 19], "-a --comm"
        else:
            # TODO(-a): switch to `-a -F 19` once build/pybpfprof --help lists --all;
            # the check above (bench.has_all) already does so when it does.
            args, how = ["-p", ",".join(map(str, pids)), "-F", 19], "-p list of %d pids" % n
        d, w = bench.cfg["host_run_s"], bench.cfg["host_warm_s"]
        share, hwm, samples = [], [], []
        for rep in range(bench.cfg["reps"]):
            r = run_pbp(args + ["-d", d], bench.out("host"), window=(w, d - 0.25))
            share.append(r.window_cpu * 100 if r.window_cpu is not None else None)
            hwm.append(r.hwm_kb / 1024.0 if r.hwm_kb else None)
            samples.append(r.s.get("delivered"))
            fixed = r.cpu
        bench.add(it, Figure("host_core_pct", "%d procs, %s, 19 Hz: CPU, %% of a core" % (n, how),
                             "%", share, "%.2f"))
        bench.add(it, Figure("host_hwm_mb", "%d procs, %s: profiler VmHWM" % (n, how), "MB",
                             hwm, "%.1f"))
        bench.det("host", "| %s | %s | %d procs (2 busy), %s samples delivered per run, "
                  "last run %.2f s CPU in %.1f s |" % (it.name, how, n,
                                                       "/".join(map(str, samples)), fixed, d))
    finally:
        for p in procs:
            kill(p)


# -- 7. high rates: what the host sustains

def rate(bench, it):
    """-F 10k/20k/50k: pybpfprof caps the rate at what the host sustains
    (see docs/usage.md, Sampling rate); the figures say what it ran at and what
    that cost."""
    d = bench.cfg["run_s"]
    busy, _ = spawn(it, "hold", DEPTH)
    figs = {hz: dict(ran=[], irq=[], achieved=[], share=[]) for hz in HIGH_RATES}
    try:
        for rep in range(bench.cfg["reps"]):
            for hz in rotate(HIGH_RATES, rep):
                r = run_pbp(["-p", busy.pid, "-F", hz, "-d", d],
                            bench.out("rate"), ref=busy.pid, timeout=d + 60)
                f = figs[hz]
                f["ran"].append(r.s.get("hz"))
                f["irq"].append(r.s.get("interrupts_per_cpu_s"))
                f["share"].append(r.s["program_cpu_share"] * 100 if "program_cpu_share" in r.s else None)
                f["achieved"].append(r.s["delivered"] / r.ref_cpu
                                     if r.ref_cpu and r.s.get("delivered") is not None else None)
                irq_us = r.s.get("interrupt_us")
    finally:
        kill(busy)
    for hz in HIGH_RATES:
        f = figs[hz]
        bench.add(it, Figure("rate_ran@%d" % hz, "-F %d: rate run at" % hz, "Hz", f["ran"], "%.0f"))
        bench.add(it, Figure("rate_irq@%d" % hz, "-F %d: interrupts/s per busy CPU" % hz, "",
                             f["irq"], "%.0f"))
        bench.add(it, Figure("rate_achieved@%d" % hz, "-F %d: samples/s of target CPU" % hz, "",
                             f["achieved"], "%.0f"))
        bench.add(it, Figure("rate_share@%d" % hz, "-F %d: BPF program, share of each CPU" % hz,
                             "%", f["share"], "%.3f"))
    bench.det("rate", "| %s | one interrupt %s µs (last run) | %s |" % (
        it.name, irq_us, "; ".join("-F %d: ran at %s Hz" % (hz, "/".join(
            str(x) for x in figs[hz]["ran"])) for hz in HIGH_RATES)))
