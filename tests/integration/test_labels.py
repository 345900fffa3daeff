"""Labels and messages (issue #30 items 3, 9, 13, 17, 18; issue #31 item 4):
the `process` root frame and pprof label carry the command line in every
place that writes them (-p A,B, -a, followed subprocesses, the agent with
--cmdline-labels) and the agent labels a process by its script by default;
the main thread has one name; -o "", dump's second -p and a refusal to root
are said plainly; bidi controls from the target are escaped. None of this
depends on a layout, so one interpreter outside a chroot runs it
(PBP_INTERPS's first, see agent_run.interps). Versions' refusals (item 13)
are tested in test_versions.py and test_dump.py.

Run alone: PBP_INTERPS=3.12 pytest-3 -x -v tests/integration/test_labels.py"""

import json
import os
import shutil
import subprocess
import time

import pytest

from agent_run import Agent, http_get, interps
from agent_receiver import free_port
from conftest import PYBPFPROF, TARGET_LIB
from nulldev import null
from pprof_wire import Profile
from profile import parse_collapsed

# Half the time busy, until killed.
SPIN_WORK = '''
import os, sys, time
from pbp_target import give_threads_native_ids, write_json
def spin_work():
    while True:
        t = time.monotonic() + 0.02
        while time.monotonic() < t:
            sum(range(200))
        time.sleep(0.02)
'''
# spin_work() in the main thread; the flags are only for its command line.
SPIN = SPIN_WORK + '''
ready = os.environ.get("PBP_READY")
if ready:
    write_json(ready, {"pid": os.getpid(), "version": list(sys.version_info[:3])})
spin_work()
'''

# Starts spin.py --flag A and --flag B (not forked: exec'd), waits until each
# has spent 0.3 s of CPU, and stops them.
PARENT = '''
import os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
kids = [subprocess.Popen([sys.executable, os.path.join(here, "spin.py"), "--flag", x]) for x in "AB"]
def cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
deadline = time.monotonic() + 60
while time.monotonic() < deadline and min(cpu(k.pid) for k in kids) < 0.3:
    time.sleep(0.05)
for k in kids:
    k.kill()
    k.wait()
'''


def write_script(path, text):
    """A target script, with pbp_target.py (what it imports) beside it."""
    path.write_text(text)
    shutil.copy(TARGET_LIB, str(path.parent))


def cmdline(pid):
    """/proc/PID/cmdline as the process label should read it: one line."""
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().rstrip(b"\0").replace(b"\0", b" ").decode()


@pytest.fixture(scope="module")
def flagged(tmp_path_factory):
    """spin.py --flag A and --flag B, running for the module: {pid: cmdline}."""
    interp = interps(1)[0]
    d = tmp_path_factory.mktemp("flagged")
    script = d / "spin.py"
    write_script(script, SPIN)
    procs = [subprocess.Popen(interp.cmd(str(script), "--flag", x), stdin=null(),
                              env=dict(os.environ, PBP_READY=str(d / x)), start_new_session=True)
             for x in "AB"]
    try:
        deadline = time.monotonic() + 30
        while not all(os.path.exists(str(d / x)) for x in "AB"):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.05)
        out = {p.pid: cmdline(p.pid) for p in procs}
        yield interp, out
    finally:
        for p in procs:
            p.kill()
            p.wait()


def roots(stacks):
    """{pid: the text of its process root after the pid} of collapsed stacks."""
    out = {}
    for frames, _ in stacks:
        word, pid, rest = (frames[0].split(" ", 2) + ["", ""])[:3]
        assert word == "process", frames[0]
        out.setdefault(int(pid), set()).add(rest)
    return out


def pprof_process_labels(path):
    """{pid: {process label}} of a pprof file, and every string it holds."""
    prof = Profile(path.read_bytes())
    out = {}
    for s in prof.samples:
        labels = prof.all_labels(s)
        if "pid" in labels:
            out.setdefault(int(labels["pid"]), set()).add(labels.get("process"))
    return out, prof.strings


def test_process_root_is_the_command_line(flagged, tmp_path):
    """-p A,B (pprof: root frame and label) and -a -p A,B (collapsed): each
    process reads its own command line, not the interpreter's name."""
    interp, want = flagged
    pids = ",".join(str(p) for p in want)
    pb = tmp_path / "two.pb.gz"
    r = subprocess.run([PYBPFPROF, "-p", pids, "-F", "99", "-d", "2", "-o", str(pb)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    labels, _ = pprof_process_labels(pb)
    assert labels == {pid: {cmd} for pid, cmd in want.items()}, (labels, want)

    txt = tmp_path / "all.txt"
    r = subprocess.run([PYBPFPROF, "-a", "-p", pids, "-F", "99", "-d", "2", "-o", str(txt)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert roots(parse_collapsed(txt.read_text())) == {pid: {cmd} for pid, cmd in want.items()}


def test_followed_children_read_their_command_lines(tmp_path):
    """Launch mode: the children a command starts are each their own root,
    named by their own command line."""
    interp = interps(1)[0]
    write_script(tmp_path / "spin.py", SPIN)
    (tmp_path / "parent.py").write_text(PARENT)
    out = tmp_path / "tree.txt"
    r = subprocess.run([PYBPFPROF, "-F", "99", "-o", str(out), "--"] +
                       interp.cmd(str(tmp_path / "parent.py")), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    texts = {t for s in roots(parse_collapsed(out.read_text())).values() for t in s}
    spin = str(tmp_path / "spin.py")
    for x in "AB":
        assert any(t.endswith("%s --flag %s" % (spin, x)) for t in texts), (x, texts)


def pull_until(agent, port, pids, tmp_path):
    """The agent's last 2 s once both pids have samples in it (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        status, _, body = http_get(port, "/debug/pprof/profile?seconds=2", timeout=30)
        if status == 200:
            path = tmp_path / ("pull%d.pb.gz" % port)
            path.write_bytes(body)
            labels, strings = pprof_process_labels(path)
            if set(pids) <= set(labels):
                return labels, strings
        assert time.monotonic() < deadline, (status, agent.describe())
        assert agent.alive(), agent.describe()
        time.sleep(0.5)


def test_agent_process_label_is_the_script_unless_asked(flagged, tmp_path):
    """The agent's pulled profiles name a process by its script by default
    (its arguments may be secrets); --cmdline-labels gives the command line."""
    interp, want = flagged
    pids = ",".join(str(p) for p in want)
    ports = [free_port(), free_port()]
    plain = Agent(tmp_path, "--listen", "127.0.0.1:%d" % ports[0], "-F", "49", "-p", pids,
                  name="plain")
    full = Agent(tmp_path, "--listen", "127.0.0.1:%d" % ports[1], "-F", "49", "-p", pids,
                 "--cmdline-labels", name="full")
    try:
        for a, port in ((plain, ports[0]), (full, ports[1])):
            a.wait_http(port)
        labels, strings = pull_until(plain, ports[0], want, tmp_path)
        assert labels == {pid: {"spin"} for pid in want}, labels
        assert not any("--flag" in t for t in strings), strings
        labels, strings = pull_until(full, ports[1], want, tmp_path)
        assert labels == {pid: {cmd} for pid, cmd in want.items()}, labels
    finally:
        plain.kill()
        full.kill()


# --- item 17: messages of the command line -----------------------------------------

@pytest.mark.parametrize("argv", [["-p", "1"], ["top", "-p", "1"], ["convert"], ["diff", "a", "b"]],
                         ids=["record", "top", "convert", "diff"])
def test_empty_output_path_is_a_usage_error(argv):
    """-o "" is refused before anything is read, not 'cannot write : ...'."""
    r = subprocess.run([PYBPFPROF] + argv + ["-o", ""], capture_output=True, text=True, timeout=30,
                       stdin=null())
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0].endswith("invalid -o '' (a file name, or - for stdout)"), r.stderr


@pytest.mark.parametrize("argv,what", [(["convert", "-i", ""], "-i"), (["diff", "", "b"], "BEFORE"),
                                        (["diff", "a", ""], "AFTER")],
                         ids=["convert", "diff-before", "diff-after"])
def test_empty_input_path_is_a_usage_error(argv, what):
    """An empty input name is refused as -o "" is (2), not "cannot read : No
    such file or directory" (10)."""
    r = subprocess.run([PYBPFPROF] + argv, capture_output=True, text=True, timeout=30,
                       stdin=null())
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0].endswith("invalid %s '' (a file name, or - for stdin)" % what), r.stderr


def test_dump_takes_one_pid(flagged):
    """dump -p A -p B dumped B alone, saying nothing of A."""
    interp, want = flagged
    a, b = sorted(want)
    r = subprocess.run([PYBPFPROF, "dump", "-p", str(a), "-p", str(b)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "dump reads one process: give -p once" in r.stderr.splitlines()[0], r.stderr
    assert r.stdout == ""


def test_refused_with_ptrace_does_not_say_needs_root(flagged):
    """A target refused to a pybpfprof that holds CAP_SYS_PTRACE (here: run
    as root of a child user namespace, the target in the parent's) is not
    told "needs root or CAP_SYS_PTRACE"."""
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "-U", "-r", "true"]).returncode != 0:
        pytest.skip("cannot make a user namespace (unshare -U -r)")
    pid = sorted(flagged[1])[0]
    r = subprocess.run([unshare, "-U", "-r", "--fork", PYBPFPROF, "dump", "-p", str(pid)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 6, r.stderr
    assert r.stderr == ("pybpfprof: pid %d: permission denied even with CAP_SYS_PTRACE (a process "
                        "of a parent user namespace, or refused by a security module)\n" % pid)


# --- item 18: bidi controls from the target ------------------------------------------

BIDI = SPIN_WORK + '''
import threading
give_threads_native_ids()
th = threading.Thread(target=spin_work, name="evil\\u2066x\\u202aq\\u202eeman", daemon=True)
th.start()
write_json(os.environ["PBP_READY"], {"pid": os.getpid(), "tid": th.native_id})
time.sleep(600)
'''
BIDI_CHARS = {chr(c) for c in list(range(0x202a, 0x202f)) + list(range(0x2066, 0x206a))}


def test_bidi_controls_escaped_on_the_terminal(start_target, tmp_path):
    """A thread name with U+2066, U+202A and U+202E is shown escaped, as
    controls are, by dump (text and JSON), a run's summary and top."""
    interp = interps(1)[0]
    script = tmp_path / "bidi.py"
    write_script(script, BIDI)
    proc, pid, ready = start_target(interp, str(script))
    shown = "evil\\u2066x\\u202aq\\u202eeman"
    runs = {"dump": ["dump", "-p", pid], "dump --json": ["dump", "-p", pid, "--json"],
            "summary": ["-p", pid, "-d", "1", "-o", tmp_path / "p.txt"],
            "top": ["top", "--once", "-d", "1", "-p", pid]}
    for what, argv in runs.items():
        r = subprocess.run([PYBPFPROF] + [str(a) for a in argv], capture_output=True, timeout=60)
        assert r.returncode == 0, (what, r.stderr)
        out = (r.stdout + r.stderr).decode()
        assert not BIDI_CHARS & set(out), (what, out)
        assert shown in out, (what, out)
        if what == "dump --json":       # lossless there: the name reads back whole
            names = {t["tid"]: t["name"] for t in json.loads(out)["threads"]}
            assert names[ready["tid"]] == "evil\u2066x\u202aq\u202eeman", names


# --- item 9: one thread, one name -----------------------------------------------------

EARLY = '''
import sys, time
def spin_before(cpu):
    end = time.process_time() + cpu
    while time.process_time() < end:
        pass
def spin_after(cpu):
    end = time.process_time() + cpu
    while time.process_time() < end:
        pass
spin_before(0.3)
assert "threading" not in sys.modules
import threading
t = threading.Thread(target=time.sleep, args=(1,))   # a new thread: the names are read again
t.start()
spin_after(0.3)
t.join()
'''


def test_main_thread_has_one_name_from_its_first_sample(tmp_path):
    """Launch mode samples the main thread before threading is imported: it
    is MainThread from the first sample, not its comm until then."""
    interp = interps(1)[0]
    script = tmp_path / "early.py"
    script.write_text(EARLY)
    out = tmp_path / "early.txt"
    r = subprocess.run([PYBPFPROF, "-t", "-F", "199", "-o", str(out), "--"] +
                       interp.cmd(interp.place(str(script))), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    names = {}
    for frames, count in stacks:
        word, tid, name = (frames[0].split(" ", 2) + ["", ""])[:3]
        assert word == "thread", frames[0]
        for f in ("spin_before", "spin_after"):
            if any(x.startswith(f + " ") for x in frames):
                names.setdefault(f, set()).add((tid, name))
    assert len(names.get("spin_before", ())) == 1 and names.get("spin_before") == names.get("spin_after"), names
    assert list(names["spin_before"])[0][1] == "MainThread", names
