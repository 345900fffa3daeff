"""Thread names in the agent (issue 31): a process's threading registries
are read when its thread list changes; a list that stays has the names of
its sampled threads checked one by one at each periodic list read (a read
of the Thread's name alone), and the threads not sampled since are not
looked at. A rename (t.name = ...) shows at the first look after it.

Counts, not seconds: the agent's own counters say which look found what.
In gil mode, whose periodic list read comes every 5 s (cpu mode's agent,
whose kernel finds new threads, reads it every 30 s: the same look, a
minute of waiting here); only the GIL's holder is sampled. One interpreter: the rule is the agent's, not a layout's (the names'
layouts are test_threadnames')."""

import json
import os
import time

from agent_receiver import free_port
from agent_run import Agent, http_get, interps, metrics, wait_metrics
from pprof_wire import Profile

SLEEPERS = 8
RENAMER = """
import json, os, threading, time
GO = os.environ["PBP_READY"] + ".go"
def spin_then_rename():
    while not os.path.exists(GO):
        for _ in range(20000):
            pass
    threading.current_thread().name = "after"
    open(GO + ".done", "w").close()
    while True:
        for _ in range(20000):
            pass
for i in range(%d):
    threading.Thread(target=time.sleep, args=(3600,), name="sleeper-%%d" %% i, daemon=True).start()
threading.Thread(target=spin_then_rename, name="before", daemon=True).start()
ready = os.environ["PBP_READY"]
with open(ready + ".tmp", "w") as f:
    f.write(json.dumps({"pid": os.getpid(), "go": GO}))
os.replace(ready + ".tmp", ready)
time.sleep(3600)
""" % SLEEPERS
READS = "pybpfprof_thread_name_reads_total"
CHECKED = "pybpfprof_thread_names_checked_total"
UNSAMPLED = "pybpfprof_thread_names_unsampled_total"


def thread_names(port, tmp_path):
    """{thread_name: samples} of the last second's pulled profile."""
    status, _, body = http_get(port, "/debug/pprof/profile?seconds=1", timeout=30)
    assert status == 200, (status, body[:300])
    prof = Profile(body)
    out = {}
    for s in prof.samples:
        name = prof.string_labels(s).get("thread_name")
        out[name] = out.get(name, 0) + s[1][0]
    return out


def test_names_checked_alone_and_rename_seen_at_next_look(start_target, tmp_path):
    """One spinning thread and SLEEPERS sleeping ones, all named before the
    agent starts: the registries are read once; each periodic list read
    checks the spinner's name alone (thread_names_checked) and leaves the
    sleepers and the main thread, never sampled, alone
    (thread_names_unsampled). Renamed, the spinner has its registries read
    again at the first look after (one check at most predates the rename:
    the counters are published once a second), and the next second's
    profile names it by its new name only."""
    script = tmp_path / "renamer.py"
    script.write_text(RENAMER)
    _, pid, ready = start_target(interps(1)[0], str(script))
    port = free_port()
    agent = Agent(tmp_path, "--listen", "127.0.0.1:%d" % port, "-m", "gil", "-F", "99", "-p", str(pid))
    try:
        agent.wait_http(port)
        m = wait_metrics(port, agent, lambda m: m.get(CHECKED, 0) >= 2, "two checks of the spinner's name")
        assert m[READS] == 1, m             # the registries were read when the process was found, only
        assert m[UNSAMPLED] >= 2 * (SLEEPERS + 1), m
        names = thread_names(port, tmp_path)
        assert names.get("before", 0) > 0 and "after" not in names, names
        with open(ready["go"], "w"):
            pass
        deadline = time.monotonic() + 30
        while not os.path.exists(ready["go"] + ".done"):
            assert time.monotonic() < deadline, "the target did not rename its thread"
            time.sleep(0.1)
        checked = metrics(port)[CHECKED]
        m = wait_metrics(port, agent, lambda m: m[READS] >= 2, "the rename's read of the registries")
        assert m[READS] == 2 and m[CHECKED] <= checked + 1, (checked, m)
        time.sleep(2)           # a whole second of profile after the read
        names = thread_names(port, tmp_path)
        assert names.get("after", 0) > 0 and "before" not in names, names
        assert not any(n.startswith("sleeper-") for n in names), names
        rc, _ = agent.stop()
        assert rc == 0, agent.describe()
    finally:
        agent.kill()


CHURNER = """
import json, os, threading, time
GO = os.environ["PBP_READY"] + ".go"
def spin(secs):
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        pass
def stay():
    while True:
        spin(1)
ready = os.environ["PBP_READY"]
with open(ready + ".tmp", "w") as f:
    f.write(json.dumps({"pid": os.getpid(), "go": GO}))
os.replace(ready + ".tmp", ready)
stayer = None
while True:
    if stayer is None and os.path.exists(GO):
        stayer = threading.Thread(target=stay, name="stayer", daemon=True)
        stayer.start()
    t = threading.Thread(target=spin, args=(0.01,), name="short")
    t.start()
    t.join()
    time.sleep(0.1)
"""
SPARED = "pybpfprof_thread_lists_spared_total"


def test_ended_threads_spare_their_list_read(start_target, tmp_path):
    """A process starting a short thread ten times a second: each one the
    kernel finds at a sample is adopted, and asks for a list read to name
    it; by then it has ended, and the read, which would find nothing else,
    is not made (thread_lists_spared). A thread still there when its read
    is due has it made: the long-lived one started later is named by its
    Python name in the next seconds' profile."""
    script = tmp_path / "churner.py"
    script.write_text(CHURNER)
    _, pid, ready = start_target(interps(1)[0], str(script))
    port = free_port()
    agent = Agent(tmp_path, "--listen", "127.0.0.1:%d" % port, "-F", "99", "-p", str(pid))
    try:
        agent.wait_http(port)
        wait_metrics(port, agent, lambda m: m.get(SPARED, 0) >= 2, "two list reads spared")
        with open(ready["go"], "w"):
            pass
        deadline = time.monotonic() + 30
        names = thread_names(port, tmp_path)
        while not names.get("stayer"):
            assert time.monotonic() < deadline, ("the new long-lived thread was never named", names)
            time.sleep(0.5)
            names = thread_names(port, tmp_path)
        rc, _ = agent.stop()
        assert rc == 0, agent.describe()
    finally:
        agent.kill()
