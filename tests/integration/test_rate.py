"""The sampling rate never starves the host (issue 14, items 2 and 7).

cpu-clock perf events are hrtimers: the kernel's perf throttling, which
works on the cost of PMU interrupts, never looks at them, so at a high -F a
small VM spent all its time in sample interrupts (a 2-vCPU VM froze for
minutes at -F 100000). pybpfprof caps the rate at what the host sustains
and says so; these tests run at the highest rate -F accepts, and check a
second process stays responsive and -d and SIGTERM are honoured."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from test_hostile import EXIT_OK, first_interp, start, finish, check_collapsed

# Rates and stalls measured against the clock: alone on the machine.
pytestmark = pytest.mark.serial

MAX_HZ = 100000         # the top of -F's documented range
STALL_LIMIT = 0.5       # the longest a second process's 20 ms loop may wait

PROBE = r"""
import sys, time
end = time.monotonic() + float(sys.argv[1])
last = time.monotonic(); worst = 0.0
while True:
    time.sleep(0.02)
    now = time.monotonic()
    worst = max(worst, now - last)
    last = now
    if now > end:
        break
print("%.3f" % worst)
"""


def max_sample_rate():
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        return int(f.read())


@pytest.mark.parametrize("stop", ["duration", "sigterm"])
def test_highest_rate_keeps_host_responsive(start_target, tmp_path, stop):
    interp = first_interp()
    proc, pid, ready = start_target(interp, "workers.py", "spinner", "spinner", "sleeper")
    seconds = 3
    probe = subprocess.Popen([sys.executable, "-c", PROBE, str(seconds + 3)],
                             stdout=subprocess.PIPE, universal_newlines=True)
    out = tmp_path / "fast.txt"
    args = ["-p", pid, "-F", MAX_HZ, "-o", out]
    p = start(args + (["-d", seconds] if stop == "duration" else []))
    if stop == "sigterm":
        time.sleep(seconds)
        t_term = time.monotonic()
        p.send_signal(signal.SIGTERM)
    r = finish(p, timeout=seconds + 60)
    worst = float(probe.communicate(timeout=60)[0])
    assert r.returncode == EXIT_OK, r
    # -d counts from the first sample; loading and measuring come before it.
    if stop == "duration":
        assert r.seconds < seconds + 2, r
    else:
        assert r.seconds - (t_term - p.t0) < 2, r
    assert worst < STALL_LIMIT, "a second process waited %.2f s for a CPU\n%r" % (worst, r)
    assert check_collapsed(out)
    # Every sample delivered is in the profile or said by kind: the last
    # drain used to end while samples still came, and the rest was said
    # "not kept (out of memory)" with gigabytes free.
    assert "not kept" not in r.stderr, r
    m = re.search(r"samples in [0-9.]+ s \([0-9.]+/s at (\d+) Hz\)", r.stderr)
    assert m, r
    hz = int(m.group(1))
    assert hz <= max_sample_rate(), r
    if hz < MAX_HZ:
        # A lowered rate is said, with the reason, at the start and in the summary.
        assert re.search(r"warning: -F %d lowered to %d Hz: " % (MAX_HZ, hz), r.stderr), r
        assert re.search(r"warning: sampled at %d Hz, not the %d asked: " % (hz, MAX_HZ),
                         r.stderr), r


def test_rate_in_stats(start_target, tmp_path):
    """--stats gives the achieved interrupt rate and the program's CPU share (make bench too)."""
    interp = first_interp()
    proc, pid, ready = start_target(interp, "workers.py", "spinner")
    r = finish(start(["-p", pid, "-F", 2000, "-d", 1, "--stats", "-o", tmp_path / "s.txt"]),
               timeout=60)
    assert r.returncode == EXIT_OK, r
    m = re.search(r"sampler +(\d+) interrupts/s per busy CPU \(at (\d+) Hz\), program "
                  r"([0-9.]+)% of each CPU, one interrupt ([0-9.]+) us", r.stderr)
    assert m, r
    assert float(m.group(4)) > 0, r       # measured: above 1000 Hz the cost is


def test_wall_while_threads_start_stays_bounded(start_target, tmp_path):
    """Item 7: attached while a process starts 1,500 threads, wall mode read
    the whole thread list (names, /proc) again for every sample of a thread
    not listed yet, back to back, inside the ring-buffer drain: no tick ran
    for the whole run, or most were dropped. Now the ticks run, the cost is
    bounded, and dropped ticks are said in a warning."""
    interp = first_interp()
    proc, pid, ready = start_target(interp, "threadstorm.py", 1500, 3)
    seconds, hz = 4, 99
    out = tmp_path / "wall.txt"
    p = start(["-p", pid, "-m", "wall", "-F", hz, "-d", seconds, "--stats", "-o", out])
    r = finish(p, timeout=seconds + 60)
    assert r.returncode == EXIT_OK, r
    assert r.seconds < seconds + 3, r
    m = re.search(r"(\d+) ticks \((\d+) dropped", r.stderr)
    assert m, r
    ticks, dropped = int(m.group(1)), int(m.group(2))
    assert ticks >= seconds * hz * 0.5, r
    if dropped:
        assert re.search(r"warning: %d of %d ticks \([0-9.]+%%\) dropped" % (
            dropped, ticks + dropped), r.stderr), r
    lists = re.search(r"thread lists +(\d+) read, ([0-9.]+) s", r.stderr)
    assert lists and float(lists.group(2)) < seconds * 0.5, r
    assert check_collapsed(out)


def test_wall_late_tick_does_not_lock_in(start_target, tmp_path):
    """Item 7: with 1,500 threads waking a few times a second, a tick that
    ran late read every thread that had switched since its instant, which
    made the next tick later still: some runs locked into reading them all
    (1.4 GB in 5 s, 85% of ticks dropped), identical ones read nothing. A
    stop of the profiler makes a tick late on purpose; the loop must
    recover: reads stay near one per thread, few ticks are dropped."""
    interp = first_interp()
    nthreads = 1500
    proc, pid, ready = start_target(interp, "sleepers.py", nthreads)
    seconds, hz = 5, 99
    p = start(["-p", pid, "-m", "wall", "-F", hz, "-d", seconds, "--stats",
               "-o", tmp_path / "wall.txt"])
    time.sleep(2)
    p.send_signal(signal.SIGSTOP)
    time.sleep(0.3)
    p.send_signal(signal.SIGCONT)
    r = finish(p, timeout=seconds + 60)
    assert r.returncode == EXIT_OK, r
    m = re.search(r"(\d+) ticks \((\d+) dropped", r.stderr)
    assert m, r
    ticks, dropped = int(m.group(1)), int(m.group(2))
    read = re.search(r"tick stacks .*?, (\d+) read at the tick", r.stderr)
    assert read, r
    print("ticks %d, dropped %d, read at the tick %s" % (ticks, dropped, read.group(1)))
    # Locked in, 90% of ticks are dropped and reads reach 20 per thread;
    # a busy machine may drop some ticks anyway.
    assert dropped <= 0.5 * (ticks + dropped), r
    assert int(read.group(1)) <= 8 * nthreads, r
