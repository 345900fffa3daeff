"""Privileges under hostile conditions: root drops to what it needs, sudo,
only the three capabilities (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE) as
nobody, a launched command given none, and a missing capability named.
Runs pybpfprof as test_hostile.py does (its start/finish/run helpers)."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import TARGET_LIB
from profile import WORKERS, func_of, total
from test_hostile import (CAP_SYS_PTRACE, EXIT_PERM, NOBODY, THREE_CAPS, check_collapsed,
                          check_rss, finish, first_interp, no_leftovers, run, start)
from nulldev import null


# --- privileges ---------------------------------------------------------------------------------

def status_caps(pid):
    caps = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Cap"):
                k, v = line.split(":")
                caps[k] = int(v.strip(), 16)
    return caps


def caps_after_setup(p, timeout=10):
    """/proc/PID/status capabilities of a running pybpfprof once it has set up
    (its effective set stops changing at the drop)."""
    deadline = time.monotonic() + timeout
    caps = None
    while time.monotonic() < deadline and p.poll() is None:
        caps = status_caps(p.pid)
        if caps["CapEff"] == CAP_SYS_PTRACE:
            break
        time.sleep(0.05)
    return caps


def test_root_drops_capabilities(start_target, tmp_path):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    for mode in ("cpu", "wall"):
        out = tmp_path / ("%s.txt" % mode)
        p = start(["-p", pid, "-d", 3, "-m", mode, "-o", out])
        caps = caps_after_setup(p)
        r = finish(p)
        assert r.returncode == 0, r
        assert caps == {"CapInh": 0, "CapPrm": CAP_SYS_PTRACE, "CapEff": CAP_SYS_PTRACE,
                        "CapBnd": CAP_SYS_PTRACE, "CapAmb": 0}, {k: hex(v) for k, v in caps.items()}
        # Sampling went on without them: new threads registered, the file written.
        assert total(check_collapsed(out)) > 100


def test_launch_mode_drops_after_start(tmp_path):
    interp = first_interp()
    out = tmp_path / "out.txt"
    # 2 s of CPU, however long a loaded machine takes to give them: about
    # 200 samples at 99 Hz, whatever the other tests do.
    p = start(["-o", out, "--"] + interp.argv + [
        "-c", "import time\nwhile time.process_time() < 2: sum(range(1000))"])
    caps = caps_after_setup(p)
    r = finish(p)
    assert r.returncode == 0, r
    assert caps["CapEff"] == CAP_SYS_PTRACE, caps
    assert total(check_collapsed(out)) > 50


@pytest.fixture
def nobody_dir():
    """A directory user 65534 can read, write and run things from."""
    d = tempfile.mkdtemp(prefix="pbp-nobody-")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def nobody_target(d):
    """workers.py spinner as uid 65534 on Debian's /usr/bin/python3.11: (Popen, pid)."""
    exe = "/usr/bin/python3.11"
    if not os.path.exists(exe) or not shutil.which("setpriv"):
        pytest.skip("needs /usr/bin/python3.11 and setpriv")
    script = os.path.join(d, "workers.py")
    shutil.copy(WORKERS, script)
    shutil.copy(TARGET_LIB, d)
    os.chmod(script, 0o644)
    os.chmod(os.path.join(d, os.path.basename(TARGET_LIB)), 0o644)
    ready = os.path.join(d, "ready.json")
    proc = subprocess.Popen(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                             "--clear-groups", exe, script, "spinner", "sleeper"],
                            env=dict(os.environ, PBP_READY=ready), stdout=null(),
                            stderr=null(), start_new_session=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(ready):
        assert proc.poll() is None and time.monotonic() < deadline, "nobody's target did not start"
        time.sleep(0.05)
    return proc


def as_nobody(caps=None):
    prefix = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
    if caps:
        prefix += ["--inh-caps=" + caps, "--ambient-caps=" + caps]
    return prefix


@pytest.mark.serial
def test_only_three_capabilities(nobody_dir, tmp_path):
    proc = nobody_target(nobody_dir)
    try:
        for mode in ("cpu", "wall"):
            out = os.path.join(nobody_dir, "%s.txt" % mode)
            p = start(["-p", proc.pid, "-d", 2, "-m", mode, "-t", "-o", out],
                      prefix=as_nobody(THREE_CAPS))
            caps = caps_after_setup(p)
            r = finish(p)
            assert r.returncode == 0, r
            check_rss(r)
            assert caps["CapEff"] == CAP_SYS_PTRACE and caps["CapPrm"] == CAP_SYS_PTRACE, caps
            assert os.stat(out).st_uid == NOBODY
            stacks = check_collapsed(out)
            assert total([s for s in stacks if "spinner" in map(func_of, s[0])]) > 50, r
        r = run(["dump", "-p", proc.pid], prefix=as_nobody(THREE_CAPS))
        assert r.returncode == 0, r
        assert "spinner" in r.stdout
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    no_leftovers()


def test_launched_command_gets_no_capabilities(nobody_dir):
    """Given the three as ambient capabilities, pybpfprof must not pass them
    on to the command it launches."""
    if not os.path.exists("/usr/bin/python3.11"):
        pytest.skip("needs /usr/bin/python3.11")
    caps_file, out = os.path.join(nobody_dir, "caps"), os.path.join(nobody_dir, "l.txt")
    code = ("import time\n"
            "open(%r, 'w').write(open('/proc/self/status').read())\n"
            "t = time.time()\n"
            "while time.time() - t < 1.5: sum(range(1000))\n" % caps_file)
    r = run(["-o", out, "--", "/usr/bin/python3.11", "-c", code], prefix=as_nobody(THREE_CAPS))
    assert r.returncode == 0, r
    with open(caps_file) as f:
        caps = dict(l.split(":\t") for l in f.read().splitlines() if l.startswith("Cap"))
    for k in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(caps[k], 16) == 0, caps
    assert total(check_collapsed(out)) > 20


@pytest.mark.parametrize("caps,missing", [
    (None, ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE"]),
    ("+bpf,+perfmon", ["CAP_SYS_PTRACE"]),
    ("+sys_ptrace", ["CAP_BPF", "CAP_PERFMON"]),
    ("+bpf,+sys_ptrace", ["CAP_PERFMON"]),
], ids=["none", "no-ptrace", "no-bpf-perfmon", "no-perfmon"])
def test_missing_capability_named(nobody_dir, caps, missing):
    proc = nobody_target(nobody_dir)
    try:
        r = run(["-p", proc.pid, "-d", 1, "-o", os.path.join(nobody_dir, "o.txt")],
                prefix=as_nobody(caps))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert r.returncode == EXIT_PERM, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r
    named = [c for c in ("CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE")
             if c in lines[0].split("(")[0]]
    assert named == missing, lines[0]


@pytest.mark.serial
def test_under_sudo(start_target, tmp_path):
    if not shutil.which("sudo"):
        pytest.skip("sudo not installed (scripts/deps.sh installs it)")
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    for mode in ("cpu", "wall"):
        out = tmp_path / ("%s.txt" % mode)
        r = run(["-p", pid, "-d", 2, "-m", mode, "-o", out], prefix=["sudo", "-n"], env=env)
        assert r.returncode == 0, r
        assert total(check_collapsed(out)) > 20
    r = run(["dump", "-p", pid], prefix=["sudo", "-n"], env=env)
    assert r.returncode == 0 and "spinner" in r.stdout, r
    no_leftovers()
