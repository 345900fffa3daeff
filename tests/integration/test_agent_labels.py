"""A process's labels in the agent (issue 31): made from /proc when it is
found, and after that only when they can have changed. A process's service
(its script) and command line change at an exec, which makes it a new
target; its container and pod at a move to another cgroup, which the
kernel tells the agent of (a tracepoint). A steady process has
its labels kept (pybpfprof_labels_kept_total), not made again
(pybpfprof_labels_made_total). --rescan 1 makes the look, once a minute by
default, once a second. Counts, not seconds; one interpreter: the rule is
the agent's, not a layout's."""

import os
import time

import pytest

from agent_receiver import free_port
from agent_run import (SERVICE, by_pid, go_raw, interps, raw_stacks, remove_made_dirs, start_service,
                       wait_metrics)
from test_agent import agents, make_pod, pull  # noqa: F401  (agents: the fixture)
from test_host import cgroup_roots

MADE = "pybpfprof_labels_made_total"
KEPT = "pybpfprof_labels_kept_total"

# Spins in before_work until the go file exists, then execs AFTER_SCRIPT.
LABEL_EXECER = """
import json, os, sys, time
GO = os.environ["PBP_READY"] + ".go"
def before_work():
    while not os.path.exists(GO):
        t = time.monotonic() + 0.02
        while time.monotonic() < t:
            sum(range(200))
        time.sleep(0.02)
ready = os.environ["PBP_READY"]
with open(ready + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "go": GO}, f)
os.replace(ready + ".tmp", ready)
before_work()
os.execv(sys.executable, [sys.executable, %r])
"""
# The exec'd program: a service spinning in after_work (its ready file
# written again, read by no one).
LABEL_AFTER = SERVICE.format(func="after_work")


def services_of(port, tmp_path, pid):
    """The service_name labels of pid's stacks in the agent's last 2 s."""
    status, _, path = pull(port, tmp_path, "seconds=2")
    assert status == 200, (status, path)
    return {labels.get("service_name") for _, _, labels in by_pid(raw_stacks(go_raw(path, tmp_path))).get(
        str(pid), [])}


def wait_services(port, tmp_path, pid, want, what):
    """pid's services in the agent's last 2 s once they are want (30 s at most)."""
    deadline = time.monotonic() + 30
    got = services_of(port, tmp_path, pid)
    while got != want:
        assert time.monotonic() < deadline, (what, got)
        time.sleep(0.5)
        got = services_of(port, tmp_path, pid)


def test_labels_kept_while_steady_made_after_exec(start_target, tmp_path, agents):
    """A busy process is looked at each second: its labels are kept, made
    once in all. It execs another
    script: a new target, its labels made again, its service the new
    script's name."""
    after = tmp_path / "after.py"
    after.write_text(LABEL_AFTER)
    script = tmp_path / "before.py"
    script.write_text(LABEL_EXECER % str(after))
    _, pid, ready = start_target(interps(1)[0], str(script))
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "--rescan", "1", "-F", "49", "-p", str(pid))
    agent.wait_http(port)
    m = wait_metrics(port, agent, lambda m: m.get(KEPT, 0) >= 3, "labels kept at three looks")
    assert m.get(MADE) == 1, (m, agent.describe())
    assert services_of(port, tmp_path, pid) == {"before"}, agent.describe()
    with open(ready["go"], "w"):
        pass
    wait_metrics(port, agent, lambda m: m.get(MADE, 0) >= 2, "labels made after the exec")
    wait_services(port, tmp_path, pid, {"after"}, "the exec'd program's service never showed")
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


@pytest.mark.serial
def test_labels_made_again_after_a_cgroup_move(start_target, tmp_path, agents):
    """A busy process kept its labels at three looks; moved into a pod's
    cgroup, the kernel says so and they are made again: its stacks carry
    the pod's container id and service from then."""
    roots = cgroup_roots()
    if not roots:
        pytest.skip("no writable cgroup hierarchy")
    host_root = str(tmp_path / "host")
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "mover")
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "--rescan", "1", "--host-root", host_root,
                   "-F", "49", "-p", str(pid))
    made = []
    try:
        agent.wait_http(port)
        m = wait_metrics(port, agent, lambda m: m.get(KEPT, 0) >= 3, "labels kept at three looks")
        assert m.get(MADE) == 1, (m, agent.describe())
        dirs, cid, _ = make_pod(roots[0][0], host_root, "containerd", ("shop", "cart-1", "cart"))
        made += dirs
        with open(os.path.join(dirs[0], "cgroup.procs"), "w") as f:
            f.write(str(pid))
        wait_metrics(port, agent, lambda m: m.get(MADE, 0) >= 2, "labels made after the move")
        wait_services(port, tmp_path, pid, {"shop/cart"}, "the pod's service never showed")
        rc, _ = agent.stop()
        assert rc == 0, agent.describe()
    finally:
        remove_made_dirs(made, start_target.procs)
