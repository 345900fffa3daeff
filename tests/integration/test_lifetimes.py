"""Profiles around process lifetimes (issue 14, items 4, 5, 6, 9, 10, 16):
short runs profiled from the first instruction to the last, frames named
although the target exited, a target that execs, SIGHUP, the launched
command's exit status, and what becomes of the command when pybpfprof dies."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import PYBPFPROF, _discover
from profile import WORKERS, func_of, no_bpf_leftovers, parse_collapsed, total, wait_sampling


def first_interp():
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable, "no interpreter"
    return usable[0]


def launch(args, cmd, timeout=60):
    return subprocess.run([PYBPFPROF] + [str(a) for a in args] + ["--"] + cmd,
                          capture_output=True, text=True, timeout=timeout)


def funcs(stacks):
    """{function name: samples with it anywhere on the stack}"""
    out = {}
    for frames, count in stacks:
        for f in set(map(func_of, frames)):
            out[f] = out.get(f, 0) + count
    return out


def few_unknown(got, stacks, starts=1):
    """Only an interpreter's start may leave a frame unnamed: a module's code
    object is freed once it is imported, sometimes before pybpfprof could
    read it (more often when pybpfprof runs slowly, under ASan)."""
    return got.get("[unknown]", 0) <= starts * max(3, 0.02 * total(stacks))


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def gone(pid, seconds):
    """pid exited (or is a zombie) within seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


# --- item 9: SIGHUP is SIGTERM -------------------------------------------------

@pytest.mark.serial
def test_sighup_writes_the_profile(start_target, tmp_path):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    out = tmp_path / "out.txt"
    p = subprocess.Popen([PYBPFPROF, "-p", str(pid), "-F", "199", "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_sampling(p, pid)
    p.send_signal(signal.SIGHUP)
    stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 0, stderr
    assert total(parse_collapsed(out.read_text())) > 30
    assert no_bpf_leftovers()
    assert proc.poll() is None, "the target must not be touched"


# --- item 10: the launched command's exit status --------------------------------

@pytest.mark.parametrize("code,want,said", [
    ("import sys; sys.exit(3)", 3, "exited with status 3"),
    ("pass", 0, "exited with status 0"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9,
     "was killed by signal 9"),
], ids=["exit3", "exit0", "sigkill"])
def test_command_exit_status(tmp_path, code, want, said):
    interp = first_interp()
    out = tmp_path / "out.txt"
    r = launch(["-o", out], interp.argv + ["-c", code])
    assert r.returncode == want, r.stderr
    assert said in r.stderr, r.stderr
    assert out.exists()


def test_command_own_exec_not_said_as_a_target_exec(interp, tmp_path):
    """The command's exec is waited for before it is looked at: its event,
    read once the target was found, dropped it, found it again and said
    "pid N exec'd at 0.00 s; profiled again" of a command that never
    exec'd (in 3 to 5 runs of 6 on 3.12 before). A chroot'd interpreter is
    launched through chroot(8), whose exec into Python is real and said."""
    if len(interp.argv) > 1:
        pytest.skip("launched through %s, which execs the interpreter" % interp.argv[0])
    out = tmp_path / "out.txt"
    spin = "import time\nend = time.process_time() + 0.1\nwhile time.process_time() < end: pass\n"
    for _ in range(6):
        r = launch(["-F", 499, "-o", out], interp.argv + ["-c", spin])
        assert r.returncode == 0, r.stderr
        assert "exec'd at" not in r.stderr, r.stderr


def test_command_status_not_when_profiling_failed(tmp_path):
    """pybpfprof's own error wins over the command's status."""
    interp = first_interp()
    r = launch(["-o", "/nonexistent/dir/out.txt"], interp.argv + ["-c", "import sys; sys.exit(3)"])
    assert r.returncode == 10, r.stderr


# --- item 16: the command dies with the profiler ----------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_command_stops_with_the_profiler(tmp_path, sig):
    interp = first_interp()
    p = subprocess.Popen([PYBPFPROF, "-o", str(tmp_path / "out.txt"), "--"] + interp.argv +
                         ["-c", "import time; time.sleep(60)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = None
    deadline = time.monotonic() + 20
    while child is None and time.monotonic() < deadline:
        kids = children(p.pid)
        child = kids[0] if kids else None
        time.sleep(0.05)
    assert child, "no command started"
    time.sleep(1)
    try:
        p.send_signal(sig)
        p.communicate(timeout=30)
        assert gone(child, 10), "the command outlived pybpfprof"
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass


# --- item 4: short runs, from the first instruction to the last -------------------

# Busy loops count wall time, as a short script does: on a loaded machine a
# target gets less CPU and fewer samples, so the checks are proportions.
# 0.7 s of its own CPU, not of wall time: on a loaded machine a wall-time
# loop got 0.1 s of CPU, no more than the interpreter's start (CI-like load:
# busy 7 of 12 samples).
SHORT = """
import time
def busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
busy(0.7)
"""


def kernel_taken(stderr):
    for line in stderr.splitlines():
        if line.startswith("pybpfprof: kernel: "):
            return int(line.split()[2])
    raise AssertionError("no kernel line in:\n" + stderr)


@pytest.mark.parametrize("mode", ["cpu", "gil"])
def test_short_run_profiled_whole(interp, tmp_path, mode):
    """A command of 0.7 s of CPU: every sample the kernel took is in the
    profile, and nearly all of them are in busy()."""
    out = tmp_path / "out.txt"
    # The default rate in cpu mode: user space takes samples in batches of
    # about a second then, longer than the command runs.
    rate = [] if mode == "cpu" else ["-F", 499]
    r = launch(["-m", mode, "-o", out] + rate, interp.argv + ["-c", SHORT])
    if mode == "gil" and interp.free_threaded:
        # No GIL to count: refused in one line, the command stopped, no profile.
        assert r.returncode == 14, r.stderr
        assert r.stderr.strip().endswith("gil mode does not apply to free-threaded build "
                                          "%d.%d.%dt: it runs without a GIL (use cpu or wall "
                                          "mode); stopping it" % interp.version), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not out.exists(), r.stderr
        return
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    got = funcs(stacks)
    busy = got.get("busy", 0)
    if mode == "cpu":
        taken = kernel_taken(r.stderr)
        assert taken >= 5, r.stderr
        # Only the interpreter's start, before its first frame, has no stack.
        assert total(stacks) >= taken - max(5, 0.1 * taken), r.stderr
        assert busy >= 0.6 * taken, (got, r.stderr)
    else:
        # Ticks at 499 Hz for 0.7 s; busy() holds the GIL whenever it runs.
        assert busy >= 0.2 * 0.7 * 499, (got, r.stderr)
    assert few_unknown(got, stacks), (got, r.stderr)


WALL = """
import sys, time
def first():
    time.sleep(1.0)
def second():
    time.sleep(0.6)
first()
second()
"""


def test_short_run_wall_counts_every_tick(interp, tmp_path):
    """Wall mode at a rate too low for the kernel to sample the interpreter's
    start: the main thread is found all the same, and each sleep counts its
    ticks."""
    out = tmp_path / "out.txt"
    hz = 5
    r = launch(["-m", "wall", "-F", hz, "-o", out], interp.argv + ["-c", WALL])
    assert r.returncode == 0, r.stderr
    got = funcs(parse_collapsed(out.read_text()))
    assert got.get("first", 0) >= 1.0 * hz - 1, (got, r.stderr)
    assert got.get("second", 0) >= 0.6 * hz - 1, (got, r.stderr)


# --- item 5: frames named although the target exited ------------------------------

def profile_last_gasp(interp, start_target, tmp_path, warm, last, hz):
    host_dir, in_dir = interp.mkdtemp()
    trigger = os.path.join(in_dir, "go")
    proc, pid, ready = start_target(interp, "lastgasp.py", trigger, warm, last)
    out = tmp_path / "out.txt"
    p = subprocess.Popen([PYBPFPROF, "-p", str(pid), "-F", str(hz), "--stats", "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)     # set up and sampling (the target sleeps: no sample yet)
    assert p.poll() is None, p.stderr.read()
    open(os.path.join(host_dir, "go"), "w").close()
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    return funcs(parse_collapsed(out.read_text())), stderr


def test_target_exiting_soon_after_attach_is_named(interp, start_target, tmp_path):
    got, err = profile_last_gasp(interp, start_target, tmp_path, 0.6, 0.0, 99)
    assert got.get("warm", 0) >= 3, (got, err)
    assert "[unknown]" not in got, (got, err)
    assert " 0 frames unnamed" in err, err


def test_code_first_run_just_before_exit_is_named(interp, start_target, tmp_path):
    got, err = profile_last_gasp(interp, start_target, tmp_path, 1.0, 0.2, 99)
    assert got.get("warm", 0) >= 5, (got, err)
    assert got.get("last_words", 0) >= 1, (got, err)
    assert "[unknown]" not in got, (got, err)


# --- item 6: a target that execs ----------------------------------------------------

# Each side spins for a second of CPU, not of the clock: the two sides'
# samples compare as well on a loaded machine as on an idle one.
EXECS = """
import os, sys, time
def before_exec():
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass
before_exec()
if sys.argv[1] == "python":
    os.execv(sys.executable, [sys.executable, "-c", '''
import time
def after_exec():
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass
after_exec()
'''])
os.execv("/bin/sh", ["sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
"""


# Serial: under ASan beside another test, the frames of the exec'd
# interpreter were named late ([unknown] over the bound).
@pytest.mark.serial
def test_exec_into_python_profiled_on(interp, tmp_path):
    out = tmp_path / "out.txt"
    r = launch(["-F", 499, "-o", out], interp.argv + ["-c", EXECS, "python"])
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    got = funcs(stacks)
    assert got.get("before_exec", 0) >= 10, (got, r.stderr)
    assert got.get("after_exec", 0) >= 0.5 * got["before_exec"], (got, r.stderr)
    assert few_unknown(got, stacks, starts=2), (got, r.stderr)
    assert "exec'd at" in r.stderr and "profiled again" in r.stderr, r.stderr


def test_exec_into_other_program_said(tmp_path):
    interp = first_interp()
    out = tmp_path / "out.txt"
    r = launch(["-F", 499, "-o", out], interp.argv + ["-c", EXECS, "sh"], timeout=120)
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    got = funcs(stacks)
    assert got.get("before_exec", 0) >= 10, (got, r.stderr)
    assert few_unknown(got, stacks), (got, r.stderr)
    assert "not profiled after: not a Python process" in r.stderr, r.stderr


# --- issue 30, item 5: a storm of short-lived fork children -------------------------

TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets", "tree.py")


# Serial: with another test beside it the forks were taken in late and 22 %
# of the children's CPU was missing (the bound is 15 %).
@pytest.mark.serial
def test_fork_storm_children_keep_their_samples(tmp_path):
    """200 children of 10 ms of CPU each, 20 alive at a time: what they spent
    (the parent's RUSAGE_CHILDREN) is in the profile, under the children's
    own roots and named, not lost because the forks were taken in slower
    than the children came and went. One interpreter: the subject is the
    process table, not a layout."""
    interp = first_interp()
    out = tmp_path / "out.txt"
    hz = 99
    r = launch(["-F", hz, "--stats=json", "-o", out],
               interp.cmd(interp.place(TREE), "storm", 200, 20, 10), timeout=180)
    assert r.returncode == 0, r.stderr
    said = json.loads(r.stdout.splitlines()[-1])
    want, parent = said["children"] * hz, said["pid"]
    stats = json.loads(next(l for l in r.stderr.splitlines() if l.startswith("{")))
    stacks = parse_collapsed(out.read_text())
    kids = [(f, c) for f, c in stacks if not f[0].startswith("process %d " % parent)]
    got = total(kids)
    named = sum(c for f, c in kids if "storm_work" in map(func_of, f))
    print("%s: children's samples %d of %.0f (%.0f%%), %d in storm_work()"
          % (interp.name, got, want, 100.0 * got / want, named))
    assert want >= 100, r.stdout
    # 200 runs of about one tick each: a few percent either way is the ticks'
    # luck, and RUSAGE_CHILDREN holds what no Python frame runs (a child's
    # fork and exit in the kernel): 91-94 % on a quiet machine, this
    # session's binaries and the one before alike; 84 % once beside other tests.
    assert 0.8 * want <= got <= 1.15 * want, r.stderr
    assert named >= 0.9 * got, (named, got, r.stderr)
    assert sum(p["lost"] for p in stats["followed"]) <= 0.02 * got, stats["followed"]
    # Item 8: the figures add up. The processes' samples are the profile's,
    # and what the kernel delivered is in it or counted by kind.
    assert sum(p["samples"] for p in stats["followed"]) == stats["samples"] == total(stacks)
    assert stats["delivered"] == (stats["samples"] + stats["no_python"] + stats["unattributed"]
                                  + stats["unowned"]), stats


# --- issue 30, item 10: the run's end ends the command ---------------------------------

LINGER = """
import os, signal, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[2], "w") as f:
    f.write(str(os.getpid()))
def linger():
    time.sleep(60)
linger()
"""


@pytest.mark.parametrize("sub,kind", [(["-d", 1], "plain"), (["-d", 1], "stubborn"),
                                      (["top", "--once"], "plain"), (["top", "-d", 1], "plain")],
                         ids=["record-d", "record-d-stubborn", "top-once", "top-d"])
def test_run_end_stops_the_command(tmp_path, sub, kind):
    """-d N -- CMD (and top's --once and -d) end when the run does, not when
    the command does: a command still running gets SIGTERM, then SIGKILL
    2 s later (one that ignores SIGTERM), the profile is written and
    pybpfprof exits 0, saying so. One interpreter: no layout is involved."""
    interp = first_interp()
    pidfile = tmp_path / "pid"
    out = ["-o", tmp_path / "out.txt"] if sub[0] != "top" else []
    t0 = time.monotonic()
    r = launch(sub + out, interp.argv + ["-c", LINGER, kind, str(pidfile)], timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert took < 20, "waited %.1f s for a 60 s command" % took
    # A loaded machine may start the interpreter slower than the run lasts:
    # stopped before it wrote its pid, the command was ended all the same.
    written = pidfile.read_text() if pidfile.exists() else ""
    if written:
        assert gone(int(written), 5), "the command outlived the run"
    if sub[0] != "top":
        assert "stopped: the run ended while it ran" in r.stderr, r.stderr
        assert (tmp_path / "out.txt").exists()


STARTER = """
import os, subprocess, sys, time
code, pids = sys.argv[1], sys.argv[2]
kids = [subprocess.Popen([sys.executable, "-c", code, k, pids + "." + k]) for k in ("plain", "stubborn")]
if os.fork() == 0:
    os.execv(sys.executable, [sys.executable, "-c", code, "plain", pids + ".forked"])
with open(pids + ".parent", "w") as f:
    f.write(str(os.getpid()))
time.sleep(60)
"""


def test_run_end_stops_what_the_command_started(tmp_path):
    """-d N -- CMD whose command started children (subprocess, fork and exec,
    one ignoring SIGTERM): when the run ends first, they are stopped with it
    (SIGTERM, SIGKILL 2 s later), not left running unprofiled (they went on
    spinning before). One interpreter: no layout is involved."""
    interp = first_interp()
    pids = tmp_path / "pid"
    # Output to a file: children left running would hold a pipe open.
    with open(tmp_path / "err", "w") as err:
        rc = subprocess.run([PYBPFPROF, "-d", "3", "-o", str(tmp_path / "out.txt"), "--"] + interp.argv
                            + ["-c", STARTER, LINGER, str(pids)], stdout=err, stderr=err, timeout=60).returncode
    assert rc == 0, (tmp_path / "err").read_text()
    written = {k: tmp_path / ("pid." + k) for k in ("parent", "plain", "stubborn", "forked")}
    started = {k: int(f.read_text()) for k, f in written.items() if f.exists() and f.read_text()}
    if len(started) < len(written):
        pytest.skip("the machine started %d of 4 processes within the run" % len(started))
    left = [k for k, pid in started.items() if not gone(pid, 5)]
    for pid in started.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, "outlived the run: %s" % left


FORKER = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)     # and so its children, forked
open(sys.argv[1], "w").close()
while True:
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
    time.sleep(0.005)
"""


def token_processes(token):
    """The pids whose command line holds token, zombies left out."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if token.encode() in f.read() and not gone(int(d), 0.01):
                    found.append(int(d))
        except (OSError, ValueError):
            pass
    return found


def test_run_end_stops_a_forking_tree(tmp_path):
    """-d N -- CMD whose command ignores SIGTERM and forks a child every few
    ms, each ignoring it too, hundreds in all: the tree is stopped where it
    is before each signal and found again before the SIGKILL, so none is
    left. Before, what it forked in the 2 s after the SIGTERM outlived the
    run (60 and more), and so did all past the first 256."""
    interp = first_interp()
    token = str(tmp_path / "forker")
    with open(tmp_path / "err", "w") as err:
        rc = subprocess.run([PYBPFPROF, "-d", "2", "-o", str(tmp_path / "out.txt"), "--"] + interp.argv
                            + ["-c", FORKER, token], stdout=err, stderr=err, timeout=60).returncode
    deadline = time.monotonic() + 5
    while (left := token_processes(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert rc == 0, (tmp_path / "err").read_text()
    assert os.path.exists(token), "the command never started"
    assert not left, "%d outlived the run" % len(left)
