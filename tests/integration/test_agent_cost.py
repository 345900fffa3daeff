"""What the node agent costs a busy node: the calls it makes for other
people's execs and for each second's slice, counted under strace (issue
#31). Counts, not timings: CPU figures are the bench's (scripts/bench,
scenario agent).

Run alone: pytest-3 -q tests/integration/test_agent_cost.py"""

import glob
import os
import re
import shutil
import subprocess
import time

import pytest

from agent_receiver import free_port
from agent_run import http_get
from conftest import PYBPFPROF, SANITIZED
from nulldev import null

# The agent watches every exec on the host, the other test worker's too,
# and what is counted (opens, the loop's waits) would count theirs: serial.
pytestmark = [pytest.mark.serial,
              pytest.mark.skipif(SANITIZED, reason="LeakSanitizer does not run under ptrace (strace)")]


def traced_agent(tmp_path, calls, args, argvs, settle):
    """The agent under strace while argvs are exec'd 0.15 s apart (past the
    kernel's 100 ms between wakeups for execs), settle s more, then stopped:
    (every thread's trace, the loop thread's, the exec'd processes). -ff: a
    file per thread, so the loop's calls are never split by the HTTP
    thread's."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace not installed (Debian: strace)")
    port, log = free_port(), str(tmp_path / "strace.log")
    tracer = subprocess.Popen([strace, "-ff", "-qq", "-e", "trace=" + calls, "-o", log, PYBPFPROF, "agent",
                               "--listen", "127.0.0.1:%d" % port, "--log-level", "warn"] + args,
                              stdin=null(), stdout=null(), stderr=null())
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if http_get(port, "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
        execs = []
        for argv in argvs:
            execs.append(subprocess.Popen(argv))
            time.sleep(0.15)
        for q in execs:
            q.wait()
        time.sleep(settle)
        with open("/proc/%d/task/%d/children" % (tracer.pid, tracer.pid)) as f:
            agent_pid = int(f.read().split()[0])
        os.kill(agent_pid, 15)
        assert tracer.wait(20) == 0
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
    text, loop = "", ""
    for name in glob.glob(log + ".*"):
        with open(name) as f:
            t = f.read()
        text += t
        if name == "%s.%d" % (log, agent_pid):
            loop = t
    return text, loop, execs


def test_execs_cost_no_comm_read(tmp_path):
    """Every exec on a node comes to the agent; without --comm its filter
    needs no command name, so /proc/PID/task/PID/comm of the exec'd
    processes is never opened (it was, once each). --container with a
    prefix nothing has keeps it off the machine's other Python processes,
    and is asked at the exec: no look is queued for 20 ms later, so the
    loop never waits 20 ms for one (it did, once per exec that woke it).
    Under strace: the opens and the waits are what is counted, not CPU."""
    # their checks are due 20 ms after each exec
    text, loop, sleepers = traced_agent(tmp_path, "openat,epoll_pwait2,epoll_wait",
                                        ["--container", "pbp-no-such-id"], [["sleep", "0.5"]] * 10, 1)
    comm = [q.pid for q in sleepers if "/proc/%d/task/%d/comm" % (q.pid, q.pid) in text]
    assert comm == [], ("command names read for", comm)
    maps = [q.pid for q in sleepers if "/proc/%d/" % q.pid in text]
    assert maps, "the exec'd processes were not looked at: the test proves nothing"
    waits = re.findall(r"^epoll_p?wait2?\(.*?(?:\{tv_sec=0, tv_nsec=(\d+)\}|, (\d+)\) )", loop, re.M)
    assert len(waits) >= 5, "the loop's waits were not traced: the test proves nothing"
    # a look's 20 ms, less the few µs to compute it; a periodic timer lands there by chance, rarely
    look = [w for w in waits if 19.0e6 <= int(w[0] or 0) <= 20.0e6 or w[1] == "20"]
    assert len(look) <= 2, ("waits of a look 20 ms after an exec", len(look), len(waits))


def test_comm_filter_reads_no_name_at_exec(tmp_path):
    """--comm asks every exec on a node for its name: the exec's event
    carries it from the kernel, so an exec the filter leaves out costs no
    /proc read at all (each was an open of /proc/PID/task/PID/comm), while
    one it lets through is still looked at. And the slice that closes each
    second reads the one kernel counter it publishes (samples lost), not
    all 21 one lookup each. Under strace: calls are counted, not CPU."""
    hit = tmp_path / "pbpcommhit"
    shutil.copy(shutil.which("sleep"), str(hit))
    argvs = [[str(hit) if i == 5 else "sleep", "0.5"] for i in range(10)]
    # the look 20 ms after the matching exec, and two more slices
    text, loop, execs = traced_agent(tmp_path, "openat,bpf", ["--comm", "^pbpcommhit$"], argvs, 2)
    left_out = [q.pid for q in execs if q.args[0] == "sleep"]
    read = [pid for pid in left_out if "/proc/%d/" % pid in text]
    assert read == [], ("/proc read for execs --comm leaves out", read)
    assert "/proc/%d/" % execs[5].pid in text, "the matching exec was not looked at: the test proves nothing"
    # the loop's reads of the kernel's counters over some 4 s: a slice's 21 were one second's
    reads = loop.count("BPF_MAP_LOOKUP_ELEM") + loop.count("BPF_MAP_LOOKUP_BATCH")
    assert 3 <= reads < 21, ("the slices' reads of the kernel's counters", reads)
