"""Scenario kframes (issue 19): what kernel frames (--kernel) cost. A target
in system calls nearly all the time (reading a file of its own in 1 MB
chunks, and getrandom) profiled in cpu mode without and with --kernel, at
99 and 999 Hz: profiler CPU per sample in steady state and BPF time per
sample by the program's own clock, over the second half of each run (the
first sample of each distinct kernel stack reads it from the map and names
it, once: not a cost per sample)."""

from common import Figure, med
from cost import cost_runs, program_us, steady
from targets import kill, spawn

KERNEL_RATES = [99, 999]
WAYS = [("nokernel", "no kernel frames (the default)", []),
        ("kernel", "--kernel", ["--kernel"])]


def kframes(bench, it):
    busy, _ = spawn(it, "syscalls")
    idle, _ = spawn(it, "idle")
    try:
        for key, label, extra in WAYS:
            runs = cost_runs(bench, it, busy.pid, idle.pid, KERNEL_RATES, bench.cfg["reps"],
                             low=False, extra=extra, warm=bench.cfg["run_s"] / 2)
            for hz in KERNEL_RATES:
                rs = runs[hz]
                bench.add(it, Figure("%s_cost_us@%d" % (key, hz), "profiler CPU/sample in "
                                     "syscalls, %s, %d Hz" % (label, hz), "µs",
                                     [steady(r) for r in rs], "%.2f"))
                bench.add(it, Figure("%s_prog_us@%d" % (key, hz), "BPF time/sample in "
                                     "syscalls, %s, %d Hz" % (label, hz), "µs",
                                     [program_us(r) for r in rs], "%.2f"))
            bench.det("kframes", "| %s | %s | %s |" % (it.name, label, "; ".join(
                "%d Hz: %d delivered" % (hz, int(med([r.s.get("delivered", 0) for r in runs[hz]])))
                for hz in KERNEL_RATES)))
    finally:
        kill(busy)
        kill(idle)
