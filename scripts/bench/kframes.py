"""Scenario kframes (issue 19): what kernel frames (--kernel) cost. A target
in system calls nearly all the time (reading a file of its own in 1 MB
chunks, and getrandom) profiled in cpu mode without and with --kernel, at
99 and 999 Hz: profiler CPU per sample in steady state and BPF time per
sample by the program's own clock, over the second half of each run (the
first sample of each distinct kernel stack reads it from the map and names
it, once: not a cost per sample)."""

from cost import ways_cost

KERNEL_RATES = [99, 999]
WAYS = [("nokernel", "no kernel frames (the default)", []),
        ("kernel", "--kernel", ["--kernel"])]


def kframes(bench, it):
    ways_cost(bench, it, "kframes", "syscalls", "syscalls", KERNEL_RATES, WAYS)
