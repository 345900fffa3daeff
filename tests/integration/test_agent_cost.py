"""What the node agent costs a busy node: the calls it makes for other
people's execs and for each second's slice, counted under strace (issue
#31). Counts, not timings: CPU figures are the bench's (scripts/bench,
scenario agent).

Run alone: pytest-3 -q tests/integration/test_agent_cost.py"""

import glob
import os
import shutil
import subprocess
import time

import pytest

from agent_receiver import free_port
from agent_run import http_get
from conftest import PYBPFPROF, SANITIZED
from nulldev import null


@pytest.mark.skipif(SANITIZED, reason="LeakSanitizer does not run under ptrace (strace)")
def test_comm_filter_reads_no_name_at_exec(tmp_path):
    """--comm asks every exec on a node for its name: the exec's event
    carries it from the kernel, so an exec the filter leaves out costs no
    /proc read at all (each was an open of /proc/PID/task/PID/comm), while
    one it lets through is still looked at. And the slice that closes each
    second reads the one kernel counter it publishes (samples lost), not
    all 21 one lookup each. Under strace: calls are counted, not CPU."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace not installed (Debian: strace)")
    hit = tmp_path / "pbpcommhit"
    shutil.copy(shutil.which("sleep"), str(hit))
    port, log = free_port(), str(tmp_path / "strace.log")
    tracer = subprocess.Popen([strace, "-ff", "-qq", "-e", "trace=openat,bpf", "-o", log,
                               PYBPFPROF, "agent", "--listen", "127.0.0.1:%d" % port,
                               "--comm", "^pbpcommhit$", "--log-level", "warn"],
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
        for i in range(10):     # apart: past the kernel's 100 ms between wakeups for execs
            execs.append(subprocess.Popen([str(hit) if i == 5 else "sleep", "0.5"]))
            time.sleep(0.15)
        for q in execs:
            q.wait()
        time.sleep(2)       # the look 20 ms after the matching exec, and two more slices
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
    left_out = [q.pid for q in execs if q.args[0] == "sleep"]
    read = [pid for pid in left_out if "/proc/%d/" % pid in text]
    assert read == [], ("/proc read for execs --comm leaves out", read)
    assert "/proc/%d/" % execs[5].pid in text, "the matching exec was not looked at: the test proves nothing"
    # the loop's reads of the kernel's counters over some 4 s: a slice's 21 were one second's
    reads = loop.count("BPF_MAP_LOOKUP_ELEM") + loop.count("BPF_MAP_LOOKUP_BATCH")
    assert 3 <= reads < 21, ("the slices' reads of the kernel's counters", reads)
