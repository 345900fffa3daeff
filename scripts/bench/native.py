"""Scenario native (issue 19): what native frames cost. A target compressing
with zlib (in libz without the GIL nearly all the time) profiled three ways,
at 99 and 999 Hz: without native frames (the default), with the leaf, and with
--native (the kernel copies 8 KiB of stack per sample, user space unwinds
it). Profiler CPU per sample in steady state and BPF time per sample by the
program's own clock, as the cost scenario measures them, but over the
second half of each run: the first sample in a library reads it (once per
library, milliseconds; natbench measures that), which is not a cost per
sample."""

from common import Figure, med
from cost import cost_runs, program_us, steady
from targets import kill, spawn

NATIVE_RATES = [99, 999]
WAYS = [("noleaf", "no native frames (the default)", []),
        ("leaf", "--native-leaf", ["--native-leaf"]),
        ("native", "--native", ["--native"]),
        ("fp", "--native=fp", ["--native=fp"])]


def native(bench, it):
    busy, _ = spawn(it, "zlib")
    idle, _ = spawn(it, "idle")
    try:
        for key, label, extra in WAYS:
            runs = cost_runs(bench, it, busy.pid, idle.pid, NATIVE_RATES, bench.cfg["reps"],
                             low=False, extra=extra, warm=bench.cfg["run_s"] / 2)
            for hz in NATIVE_RATES:
                rs = runs[hz]
                bench.add(it, Figure("%s_cost_us@%d" % (key, hz), "profiler CPU/sample in libz, "
                                     "%s, %d Hz" % (label, hz), "µs",
                                     [steady(r) for r in rs], "%.2f"))
                bench.add(it, Figure("%s_prog_us@%d" % (key, hz), "BPF time/sample in libz, "
                                     "%s, %d Hz" % (label, hz), "µs",
                                     [program_us(r) for r in rs], "%.2f"))
            bench.det("native", "| %s | %s | %s |" % (it.name, label, "; ".join(
                "%d Hz: %d delivered" % (hz, int(med([r.s.get("delivered", 0) for r in runs[hz]])))
                for hz in NATIVE_RATES)))
    finally:
        kill(busy)
        kill(idle)
