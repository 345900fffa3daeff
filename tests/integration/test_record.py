"""Kernel-triggered sampling (`pybpfprof -p PID`, launch mode, shutdown) on
every interpreter: profiles are checked against what targets measure of
themselves."""

import json
import math
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from codecache import kernel_code_cache
from conftest import PYBPFPROF, TARGETS, _discover, pybpfprof
from profile import (FRAME, WORKERS, no_bpf_leftovers, ready_side_path, by_thread, bpf_programs_of_dead,
                     func_of, marks, parse_collapsed, task_cpu_ns, total, wait_for, wait_sampling)


# Tests that only read a target share it (shared_target): one interpreter's
# tests run after the other's, so one interpreter's targets live at a time.
INTERP_SCOPE = "module"


def profile_of(tmp_path, *args, timeout=120):
    out = tmp_path / "out.txt"
    r = pybpfprof(*args, "-o", out, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return parse_collapsed(out.read_text()), r.stderr


def profile_until(tmp_path, enough, *args, tries=5):
    """profile_of, again and again (up to tries) until enough(stacks of all
    the runs so far): a loaded machine gives the target less CPU, and a
    cpu-mode check waits for its sample count rather than a fixed time.
    The stacks of all runs, and each run's stderr."""
    stacks, errs = [], []
    for _ in range(tries):
        more, err = profile_of(tmp_path, *args)
        stacks += more
        errs.append(err)
        if enough(stacks):
            break
    return stacks, errs


def tids(ready, kind):
    return [t["native_id"] for t in ready["threads"] if t["kind"] == kind]


def read_split(interp, ready):
    path = ready_side_path(interp, ready, ".split")
    wait_for(path)
    with open(path) as f:
        return json.load(f)


def test_cpu_split_matches_target(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, WORKERS, "split", "idle")
    spent = {"light": 0.0, "heavy": 0.0}
    light = heavy = 0
    # A loaded machine gives the target less CPU: profile until 2,000 samples.
    for _ in range(4):
        before = read_split(interp, ready)
        stacks, err = profile_of(tmp_path, "-p", pid, "-F", 999, "-d", 4)
        after = read_split(interp, ready)
        for k in spent:
            spent[k] += after[k] - before[k]
        light += sum(c for fr, c in stacks if "light" in map(func_of, fr))
        heavy += sum(c for fr, c in stacks if "heavy" in map(func_of, fr))
        if light + heavy >= 2000:
            break
    assert light + heavy >= 2000, err
    want = spent["heavy"] / (spent["light"] + spent["heavy"])
    got = heavy / (light + heavy)
    # Each sample is a draw of which function runs: 4 standard deviations of
    # that binomial share (0.03 at 2,000 samples, 0.02 at 4,500) fail one
    # honest run in 16,000, and still catch a bias of a few percent.
    n = light + heavy
    bound = max(0.02, 4 * math.sqrt(want * (1 - want) / n))
    assert abs(got - want) <= bound, "profile %.3f vs target's own %.3f over %d samples" % (
        got, want, n)


def test_sleeping_threads_never_sampled(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, WORKERS, "spinner", "idle*3")
    spinner = tids(ready, "spinner")[0]
    stacks, errs = profile_until(tmp_path, lambda st: total(by_thread(st).get(spinner, [])) > 500,
                                 "-p", pid, "-F", 999, "-d", 2, "-t")
    threads = by_thread(stacks)
    for tid in tids(ready, "idle") + [ready["main_native_id"]]:
        assert tid not in threads, "a sleeping thread was sampled: %s" % threads.get(tid)
    assert total(threads[spinner]) > 500, errs


@pytest.mark.every_version
def test_deep_recursion_whole_with_exact_lines(interp, shared_target, tmp_path):
    proc, pid, ready = shared_target(interp, WORKERS, "deep")

    def recursing(stacks):
        return [(fr, c) for fr, c in stacks if any(func_of(f) == "recurse" for f in fr)]
    stacks, errs = profile_until(tmp_path, lambda st: total(recursing(st)) > 200,
                                 "-p", pid, "-F", 499, "-d", 2, "--stats")
    err = errs[-1]
    m = marks()
    deep = recursing(stacks)
    assert total(deep) > 200, errs
    for frames, count in deep:
        rec = [f for f in frames if func_of(f) == "recurse"]
        assert len(rec) == 300, "recursion cut at %d frames" % len(rec)
        first = frames.index(rec[0])
        script = FRAME.match(rec[0]).group("file")
        assert script.endswith("/workers.py")
        assert frames[first - 1] == "deep (%s:%d)" % (script, m["deep-entry"])
        assert rec[:-1] == ["recurse (%s:%d)" % (script, m["deep-call"])] * 299
        assert rec[-1] in ["recurse (%s:%d)" % (script, m[k]) for k in ("deep-spin", "deep-loop")]
        assert frames[first:first + 300] == rec, "other frames inside the recursion"
    assert "completed in user space" in err
    completed = int(err.split(" completed in user space")[0].rsplit(" ", 1)[1])
    assert completed > 0, err
    # --stats says how the kernel read the frames: 3.11+ from copies of the data stack.
    walk = re.search(r"kernel walk +(\d+) frames from (\d+) data-stack copies, (\d+) read one by one", err)
    assert walk, err
    assert (int(walk.group(1)) > int(walk.group(3))) == (interp.version[:2] >= (3, 11)), walk.group(0)


@pytest.mark.families
def test_kernel_walk_copies_the_data_stack(interp, shared_target, tmp_path):
    """3.11+: the kernel takes a thread's frames from copies of its data
    stack, a chunk at a time, not a read per frame; the stack stays exact.
    3.6-3.10 frames are heap objects: read one by one. The recording's
    --stats=json and the text --stats of the test above are two runs: each
    output of the summary is checked."""
    proc, pid, ready = shared_target(interp, WORKERS, "deep")
    stacks, err = profile_of(tmp_path, "-p", pid, "-F", 499, "-d", 1.5, "--stats=json")
    st = json.loads([l for l in err.splitlines() if l.startswith("{")][0])
    walk = st["kernel_walk"]
    deep = [(fr, c) for fr, c in stacks if any(func_of(f) == "recurse" for f in fr)]
    assert total(deep) > 50, err   # a loaded machine gives the target little CPU
    assert all(sum(func_of(f) == "recurse" for f in fr) == 300 for fr, c in deep), err
    frames = walk["bulk_frames"] + walk["frame_reads"]
    assert frames >= 128 * total(deep), walk
    if interp.version[:2] >= (3, 11):
        # 128 frames a sample, in one or two chunks: a copy or two each, a few reads alone.
        assert walk["bulk_frames"] >= 0.95 * frames, walk
        assert walk["bulk_copies"] <= 3 * st["taken"], walk
    else:
        assert walk["bulk_frames"] == walk["bulk_copies"] == 0, walk
    # 3.14+, and a 3.13 of a known layout: a steady stack's code objects come from the kernel's
    # cache. Elsewhere a recursion's object is read once a walk (each sample, 3 or 4 objects)
    # and its other frames take what that read gave (code_near).
    named = walk["code_hits"] + walk["code_misses"]
    assert named >= 128 * total(deep) and walk["code_hits"] >= 0.95 * named, walk
    if not kernel_code_cache(interp):
        assert walk["code_misses"] >= st["taken"], walk


# --- achieved rate: one interpreter is enough, it measures the kernel side -----

def first_interp():
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable, "no interpreter"
    return usable[0]


@pytest.mark.parametrize("hz", [99, 999])
@pytest.mark.serial
def test_achieved_rate(start_target, tmp_path, hz):
    """Samples per second of the spinner's own CPU time are the rate asked,
    within 5 %. Its CPU is read from the kernel around the run; the run also
    holds the profiler's start (BPF load) and end, when nothing samples, so
    the CPU counted is the share of it that fell in the `seconds` sampling
    ran (--stats=json): under load the start takes longer, not the rate."""
    interp = first_interp()
    proc, pid, ready = start_target(interp, WORKERS, "spinner")
    spin = tids(ready, "spinner")[0]
    out = tmp_path / "out.txt"
    before, t0 = task_cpu_ns(pid, spin), time.monotonic()
    r = pybpfprof("-p", pid, "-F", hz, "-d", 10 if hz < 500 else 5, "-t", "-o", out,
                  "--stats=json", "-q")
    wall, cpu_s = time.monotonic() - t0, (task_cpu_ns(pid, spin) - before) / 1e9
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stderr.strip().splitlines()[-1])
    cpu_sampled = cpu_s * min(1.0, stats["seconds"] / wall)
    got = total(by_thread(parse_collapsed(out.read_text())).get(spin, []))
    want = hz * cpu_sampled
    assert 0.95 * want <= got <= 1.05 * want, "%d samples for %.2f s of CPU (%.2f s in %.2f s sampling " \
        "of %.2f s) at %d Hz" % (got, cpu_sampled, cpu_s, stats["seconds"], wall, hz)


# --- launch mode ------------------------------------------------------------

# burn() spins for CPU seconds, not wall seconds: its samples (cpu mode)
# are as many on a loaded machine as on an idle one.
FINITE = """
import os, sys, time
def burn():
    end = time.process_time() + float(sys.argv[1])
    while time.process_time() < end:
        sum(range(1000))
with open(sys.argv[2], "w") as f:
    f.write("%d %d" % (os.getuid(), os.getgid()))
burn()
"""


def launch(interp, tmp_path, env=None):
    # pytest's tmp_path sits under a 0700 directory: the dropped user could
    # not read the script there.
    shared = tempfile.mkdtemp(prefix="pbp-launch-")
    os.chmod(shared, 0o755)
    script_host = os.path.join(shared, "finite.py")
    with open(script_host, "w") as f:
        f.write(FINITE)
    os.chmod(script_host, 0o644)
    script = interp.place(script_host)
    host_dir, inside_dir = interp.mkdtemp()
    if not interp.chrooted:
        host_dir = inside_dir = shared
    os.chmod(host_dir, 0o777)
    ids = os.path.join(inside_dir, "ids")
    out = tmp_path / "out.txt"
    r = subprocess.run([PYBPFPROF, "-F", "499", "-o", str(out), "--"] + interp.cmd(script, "1.5", ids),
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    assert total([s for s in stacks if "burn" in map(func_of, s[0])]) > 150
    assert no_bpf_leftovers()
    with open(interp.host_path(ids)) as f:
        got = f.read()
    shutil.rmtree(shared)
    return got, out


def test_launch_profiles_from_start_and_exits_with_target(interp, tmp_path):
    ids, out = launch(interp, tmp_path)
    assert ids == "0 0"


def test_launch_under_sudo_runs_as_invoking_user(tmp_path):
    """Under sudo the command runs as the invoking user, never as root, and
    the profile belongs to that user."""
    interp = [i for i in _discover() if not i.skip_reason and i.name == "3.11-debian-static"]
    if not interp:
        pytest.skip("Debian's /usr/bin/python3.11 is needed (readable by any user)")
    env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534")
    ids, out = launch(interp[0], tmp_path, env)
    assert ids == "65534 65534"
    st = os.stat(str(out))
    assert (st.st_uid, st.st_gid) == (65534, 65534)


def test_launch_not_python(tmp_path):
    r = subprocess.run([PYBPFPROF, "-o", str(tmp_path / "o.txt"), "--", "sleep", "0.3"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 4, r.stderr
    # it ended before the 10 s were up: said as that, not as a verdict on what it was
    assert r.stderr.strip().splitlines() == [
        "pybpfprof: 'sleep' exited with status 0 before an interpreter was found in it: "
        "nothing profiled"]
    r = subprocess.run([PYBPFPROF, "-o", str(tmp_path / "o.txt"), "--", "/nonexistent/cmd"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 4
    assert r.stderr.strip().splitlines() == [
        "pybpfprof: cannot run '/nonexistent/cmd': No such file or directory"]


# --- shutdown -----------------------------------------------------------------

def start_profiler(pid, out):
    """pybpfprof -p PID -o out, returned once it samples the target."""
    p = subprocess.Popen([PYBPFPROF, "-p", str(pid), "-F", "199", "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_sampling(p, pid)
    return p


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.serial
def test_signal_writes_complete_profile(shared_target, tmp_path, sig):
    proc, pid, ready = shared_target(first_interp(), WORKERS, "spinner")
    out = tmp_path / "out.txt"
    p = start_profiler(pid, out)
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 0, stderr
    text = out.read_text()
    assert text.endswith("\n")
    assert total(parse_collapsed(text)) > 30
    assert no_bpf_leftovers()
    assert proc.poll() is None, "the target must not be touched"


def test_duration(shared_target, tmp_path):
    proc, pid, ready = shared_target(first_interp(), WORKERS, "spinner")
    spin = tids(ready, "spinner")[0]
    before, t0 = task_cpu_ns(pid, spin), time.monotonic()
    stacks, err = profile_of(tmp_path, "-p", pid, "-d", 1.5)
    assert 1.4 <= time.monotonic() - t0 < 10
    # The samples follow the CPU the spinner got (99 Hz by default), which a
    # loaded machine cuts: 50, as on an idle machine, or half of what its
    # CPU seconds give, and the target must have got enough to tell.
    cpu = (task_cpu_ns(pid, spin) - before) / 1e9
    assert total(stacks) >= min(50, 0.5 * 99 * cpu) > 5, (total(stacks), cpu, err)


@pytest.mark.serial
def test_sigkill_leaves_no_kernel_objects_and_no_partial_file(shared_target, tmp_path):
    proc, pid, ready = shared_target(first_interp(), WORKERS, "spinner")
    out = tmp_path / "out.txt"
    p = start_profiler(pid, out)
    p.kill()
    p.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while bpf_programs_of_dead() and time.monotonic() < deadline:
        time.sleep(0.1)  # the kernel frees them once the last fd is closed
    assert no_bpf_leftovers()
    assert not out.exists()
    assert not [f for f in os.listdir(tmp_path) if f.startswith("out.txt")]


@pytest.mark.serial
def test_target_exit_ends_run(start_target, tmp_path):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    out = tmp_path / "out.txt"
    p = start_profiler(pid, out)
    proc.kill()
    proc.wait()
    stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 0, stderr
    assert total(parse_collapsed(out.read_text())) > 30
    assert no_bpf_leftovers()


def test_errors(tmp_path):
    r = pybpfprof("-p", "4194301", "-d", "1")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    r = pybpfprof("-F", "0", "-p", "1")
    assert r.returncode == 2
    r = pybpfprof()
    assert r.returncode == 2 and "give -p PID, -a, or a command" in r.stderr


@pytest.mark.parametrize("cmd", [[], ["top", "-p", "1"], ["convert", "-i", "in.txt"],
                                 ["diff", "a.txt", "b.txt"]])
def test_output_extension_no_format_has(tmp_path, cmd):
    """-o p.hmtl (a typo) used to write collapsed stacks under that name with
    exit 0: now one line naming -f, exit 2, no file; with -f, or a path with
    no extension, it is written as before."""
    out = tmp_path / "p.hmtl"
    args = cmd or ["-p", "1"]
    r = pybpfprof(*args, "-o", out, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    first, *rest = r.stderr.splitlines()
    assert "no format is written as '.hmtl': name one with -f" in first, r.stderr
    assert not any(ln.startswith("pybpfprof") for ln in rest), r.stderr  # then argp's "Try"
    assert not out.exists()
    src = tmp_path / "in.txt"
    src.write_text("main;work 3\n")
    r = pybpfprof("convert", "-i", src, "-f", "collapsed", "-o", out)
    assert r.returncode == 0 and out.read_text() == "main;work 3\n", r.stderr


def test_thread_named_after_the_names_were_read(interp, start_target, tmp_path):
    """A thread threading learns of only after pybpfprof read the names
    (targets/latename.py: _thread, named 1 s in) is named within seconds,
    not after the 30 s between two reads of an unchanged thread list: it
    was one root under its comm for the whole of a short run."""
    proc, pid, ready = start_target(interp, os.path.join(TARGETS, "latename.py"), 1)
    out = tmp_path / "late.txt"
    r = pybpfprof("-p", pid, "-t", "-F", 99, "-d", 5, "-o", out)
    assert r.returncode == 0, r.stderr
    roots = {}
    for frames, count in parse_collapsed(out.read_text()):
        if frames[0].startswith("thread %d " % ready["tid"]):
            roots[frames[0]] = roots.get(frames[0], 0) + count
    named = roots.get("thread %d late-named" % ready["tid"], 0)
    assert named >= 0.3 * sum(roots.values()), roots
