"""Four threads spinning at once in four functions, on 2 CPUs
(targets/fourspin.py): cpu mode must split the samples as the threads' own
thread_time splits, and dump must name every running thread's frame and line
exactly. Written for free-threaded 3.14t (issue #20), where the four run in
parallel with no GIL between them; it runs on GIL builds too, where the GIL
takes turns among them instead: the oldest (offsets from our table), the
3.13 and 3.14 ones (from _Py_DebugOffsets), about 22 s each: cpu mode at 99
and 999 Hz, and dump."""

import json
import math
import os
import time

import pytest

from conftest import pybpfprof
from profile import by_thread, parse_collapsed, ready_side_path, total, wait_for

# The split of two CPUs among four threads within 3 points: no other test's
# load (serial); the dump test only reads frames and runs in the parallel pass.
# One target per interpreter serves every test (shared_target), one
# interpreter's tests after the other's.
INTERP_SCOPE = "module"

FOURSPIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets", "fourspin.py")
TOLERANCE = 0.03    # the 3 points
# The two rates, each recorded long enough for a few thousand
# samples on 2 free CPUs (fewer with a GIL, or with the CPUs shared). A share
# estimated from n samples is off by about sqrt(p(1-p)/n) by chance alone, so
# the bound is the larger of 3 points and 4 binomial sigmas of the count
# taken: 3 points at 999 Hz (3,000-3,600 samples in 4 s measured on a loaded
# 2-CPU machine), at 99 Hz 6-9 points (520-740 in 8 s): statistical there.
SECONDS = {99: 8, 999: 4}
MIN_SAMPLES = 100   # 4 sigmas stay under 20 points: the check still checks
INTERPRETERS = ["3.6", "3.13", "3.14-sid-chroot", "3.14t-sid-chroot"]


@pytest.fixture
def fourspin(interp, shared_target):
    proc, pid, ready = shared_target(interp, FOURSPIN)
    times = ready_side_path(interp, ready, ".times")
    wait_for(times)
    return pid, ready, times


def times_since(path, since, timeout=30):
    """The threads' times ({"at", "spent"}) as the target copied them at `since` or later:
    with a GIL, its main thread may wait long for its turn to write them."""
    deadline = time.monotonic() + timeout
    while True:
        with open(path) as f:
            t = json.load(f)
        if t["at"] >= since:
            return t
        assert time.monotonic() < deadline, "no times written since %f: %r" % (since, t)
        time.sleep(0.05)


def bound(share, n):
    """3 points, or 4 binomial sigmas of a share counted from n samples."""
    return max(TOLERANCE, 4 * math.sqrt(share * (1 - share) / n))


@pytest.mark.serial
@pytest.mark.parametrize("hz", sorted(SECONDS))
def test_cpu_split_matches_thread_time(fourspin, tmp_path, hz):
    pid, ready, times = fourspin
    out = tmp_path / "cpu.txt"
    before = times_since(times, time.time())["spent"]
    r = pybpfprof("-p", pid, "-m", "cpu", "-F", hz, "-d", SECONDS[hz], "-t", "-o", out)
    after = times_since(times, time.time())["spent"]
    assert r.returncode == 0, r.stderr
    threads = by_thread(parse_collapsed(out.read_text()))
    spent = {t["native_id"]: after[t["name"]] - before[t["name"]] for t in ready["threads"]}
    samples = {tid: total(threads.get(tid, [])) for tid in spent}
    assert sum(samples.values()) >= 0.95 * sum(total(v) for v in threads.values()), threads.keys()
    n = sum(samples.values())
    assert n >= MIN_SAMPLES, (n, r.stderr)
    for t in ready["threads"]:
        tid = t["native_id"]
        want = spent[tid] / sum(spent.values())
        got = samples[tid] / n
        assert abs(got - want) <= bound(want, n), (t["name"], got, want, samples, spent, r.stderr)
    # Every sample of a spinning thread is in its own function.
    for t in ready["threads"]:
        for frames, _ in threads.get(t["native_id"], []):
            assert any(f.startswith(t["function"] + " (") for f in frames), (t["name"], frames)


ONCPU = ("[running]", "[native, no GIL]")


@pytest.mark.serial
def test_wall_oncpu_matches_thread_time(fourspin, tmp_path):
    """wall --status: the ticks a thread is counted on a CPU are the share
    of the time it spent on one. Four threads contend for 2 CPUs (with a
    GIL, also for it): each switches often, several times between a tick's
    instant and the moment the loop looks. Reading the state then, flipped
    once per late switch, said [running] about half the time whatever the
    truth (3.14t under load: 49-56 % each against 42 % measured, 205 % in
    all on 2 CPUs); the kernel now keeps the last switches' instants."""
    pid, ready, times = fourspin
    out = tmp_path / "wall.txt"
    before = times_since(times, time.time())
    r = pybpfprof("-p", pid, "-m", "wall", "--status", "-F", 99, "-d", 8, "-t", "-o", out)
    after = times_since(times, time.time())
    assert r.returncode == 0, r.stderr
    threads = by_thread(parse_collapsed(out.read_text()))
    got, want, n_all = {}, {}, []
    for t in ready["threads"]:
        stacks = threads.get(t["native_id"], [])
        n = total(stacks)
        assert n >= MIN_SAMPLES, (t["name"], n, r.stderr)
        n_all.append(n)
        got[t["name"]] = sum(c for frames, c in stacks if frames[-1] in ONCPU) / n
        want[t["name"]] = (after["spent"][t["name"]] - before["spent"][t["name"]]) / \
            (after["at"] - before["at"])
    msg = ("got", {k: round(v, 3) for k, v in got.items()}, "want", {k: round(v, 3) for k, v in want.items()})
    for name in got:
        assert abs(got[name] - want[name]) <= bound(want[name], min(n_all)), (name,) + msg
    # The four together: the sum's chance error is about twice one's.
    assert abs(sum(got.values()) - sum(want.values())) <= 2 * bound(0.5, min(n_all)), msg


def schedstat(pid, tids):
    """{tid: (ns on a CPU, ns runnable waiting for one)}: the kernel's own
    account of each thread (/proc/PID/task/TID/schedstat)."""
    out = {}
    for tid in tids:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            run, wait = f.read().split()[:2]
        out[tid] = (int(run), int(wait))
    return out


@pytest.mark.serial
def test_wall_sleep_and_wait_match_schedstat(interp, fourspin, tmp_path):
    """wall --status on 3.14t (no GIL: a thread off CPU sleeps or waits for a
    CPU): the ticks a thread is [sleeping] are the share of the time the
    kernel says it was neither on a CPU nor waiting for one. A thread woken
    from a sleep waits for a CPU (four threads, 2 CPUs) until its switch in,
    and counted [sleeping] all that time: switches were watched, not
    wakeups (3.14t, lightly loaded: [sleeping] 25.7/55.6/61.2/71.2 % against
    2.0/35.8/49.1/57.8 % by the kernel's account; now within 2 points)."""
    if not interp.free_threaded:
        pytest.skip("free-threaded: with a GIL, a woken GIL waiter is [gil wait], which the "
                    "kernel's runnable time does not tell apart")
    pid, ready, _ = fourspin
    tids = [t["native_id"] for t in ready["threads"]]
    out = tmp_path / "wall.txt"
    before, t0 = schedstat(pid, tids), time.monotonic()
    r = pybpfprof("-p", pid, "-m", "wall", "--status", "-F", 99, "-d", 8, "-t", "-o", out)
    after, wall = schedstat(pid, tids), time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    threads = by_thread(parse_collapsed(out.read_text()))
    got, want, n_all = {}, {}, []
    for t in ready["threads"]:
        tid = t["native_id"]
        stacks = threads.get(tid, [])
        n = total(stacks)
        assert n >= MIN_SAMPLES, (t["name"], n, r.stderr)
        n_all.append(n)
        run, wait = (after[tid][i] - before[tid][i] for i in range(2))
        got[t["name"]] = sum(c for frames, c in stacks if frames[-1] == "[sleeping]") / n
        want[t["name"]] = max(0.0, 1 - (run + wait) / 1e9 / wall)
    msg = ("got", {k: round(v, 3) for k, v in got.items()}, "want", {k: round(v, 3) for k, v in want.items()})
    for name in got:
        assert abs(got[name] - want[name]) <= bound(want[name], min(n_all)), (name,) + msg


def test_dump_exact_while_all_run(fourspin, pybpfprof):
    pid, ready, times = fourspin
    for _ in range(10):
        r = pybpfprof("dump", "-p", pid, "--json")
        assert r.returncode == 0, r.stderr
        threads = json.loads(r.stdout)["threads"]
        # One GIL, one holder: read once per dump, never per thread (it
        # passed between those reads, and two threads held it).
        assert sum(t["holds_gil"] is True for t in threads) <= 1, threads
        by_tid = {t["tid"]: t for t in threads}
        for t in ready["threads"]:
            d = by_tid[t["native_id"]]
            assert d["error"] is None, (t["name"], d["error"])
            top, caller = d["frames"][0], d["frames"][1]
            assert (top["function"], top["file"]) == (t["function"], ready["script"]), (t["name"], d)
            first, last = t["lines"]
            assert first <= top["line"] <= last, (t["name"], top, t["lines"])
            assert (caller["function"], caller["file"]) == ("run", ready["script"]), (t["name"], d)
    # In text, state R is what the kernel says it is: on a CPU or waiting for
    # one (four threads, 2 CPUs: two of them wait), never "on CPU". With a
    # GIL one spinner at a time runs, and the states are read in turn, not
    # at one instant: the GIL can pass from a thread not yet read to one
    # read already. Some dump in a few shows a thread running.
    seen = []
    for _ in range(5):
        r = pybpfprof("dump", "-p", pid)
        assert r.returncode == 0, r.stderr
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("Thread ")]
        assert not any("on CPU" in ln for ln in lines), r.stdout
        assert sum("holds the GIL" in ln for ln in lines) <= 1, r.stdout
        seen.append(r.stdout)
        if any("running or runnable" in ln for ln in lines):
            break
    else:
        raise AssertionError("no thread running or runnable in 5 dumps:\n" + "\n".join(seen))
