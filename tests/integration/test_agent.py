"""The node agent, `pybpfprof agent` (issue 17): profiles every Python
process (here restricted with -p to the test's own) and serves the last
seconds as pprof, its figures to a real Prometheus, and pushes windows to
a Pyroscope-like receiver (agent_receiver.py), through refusals, retries,
an outage and SIGTERM; options from the environment; Kubernetes names from
the OCI bundles of containerd and CRI-O under --host-root.

Run alone: PBP_INTERPS=3.13,3.11-debian-static pytest-3 -q tests/integration/test_agent.py"""

import base64
import collections
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import uuid

import pytest

from agent_prom import PROMETHEUS, Prometheus
from agent_receiver import Receiver, free_port
from conftest import PYBPFPROF
from agent_run import (Agent, by_pid, go_raw, http_get, interps, metrics, raw_stacks,
                       remove_made_dirs, start_service)
from pprof_wire import Profile
from test_host import cgroup_roots
from nulldev import null

# The agents here watch their own targets (-p) and are judged by what those
# did, by HTTP and by pushes: the parallel pass takes them. Serial: an agent
# without -p (it sees the other worker's processes and execs), the timing of
# pushes, windows and the exit against the clock, and a 3 s pull that needs
# samples of two half-busy targets (both failed beside the bench at load 20).

SPIN = """
import time
def {func}():
    while True:
        t = time.monotonic() + 0.02
        while time.monotonic() < t:
            pass
        time.sleep(0.02)
{func}()
"""
METRICS = ["pybpfprof_samples_total", "pybpfprof_lost_samples_total", "pybpfprof_processes",
           "pybpfprof_pushes_total", "pybpfprof_push_errors_total",
           "pybpfprof_push_bytes_total", "pybpfprof_push_dropped_windows_total",
           "pybpfprof_queue_windows", "pybpfprof_queue_bytes", "process_cpu_seconds_total",
           "process_resident_memory_bytes"]


@pytest.fixture
def agents():
    """agents(tmp_path, *args, env=...) -> Agent; every one killed at teardown."""
    started = []

    def start(*args, **kwargs):
        a = Agent(*args, name="agent%d" % len(started), **kwargs)
        started.append(a)
        return a
    yield start
    for a in started:
        a.kill()


@pytest.fixture
def receivers():
    made = []

    def make(policy=None):
        r = Receiver(policy)
        made.append(r)
        return r
    yield make
    for r in made:
        r.stop()


def two_services(start_target, tmp_path):
    """alpha_svc and beta_svc on two interpreters: {name: (pid, version)}."""
    a, b = interps(2)
    return {"alpha_svc": start_service(start_target, tmp_path, a, "alpha_svc"),
            "beta_svc": start_service(start_target, tmp_path, b, "beta_svc")}


def pull(port, tmp_path, query):
    """GET /debug/pprof/profile?QUERY into a file: (status, headers, path or body)."""
    status, headers, body = http_get(port, "/debug/pprof/profile?" + query, timeout=30)
    if status != 200:
        return status, headers, body
    path = tmp_path / ("pull-%s.pb.gz" % uuid.uuid4().hex[:8])
    path.write_bytes(body)
    return status, headers, path


# --- 1: pull --------------------------------------------------------------------------

def test_pull_profile_per_service(start_target, tmp_path, agents):
    svc = two_services(start_target, tmp_path)
    pids = {name: pid for name, (pid, _) in svc.items()}
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-F", "49", "--node", "node-a",
                   "-p", "%d,%d" % (pids["alpha_svc"], pids["beta_svc"]))
    status, body = agent.wait_http(port)
    assert (status, body.strip()) == (200, b"ok"), (status, body)
    time.sleep(max(0, agent.started + 7 - time.time()))

    # go's own pprof fetches it from the URL
    raw = go_raw("http://127.0.0.1:%d/debug/pprof/profile?seconds=5" % port, tmp_path)
    stacks = by_pid(raw_stacks(raw))
    for name, (pid, version) in svc.items():
        other = [n for n in svc if n != name][0]
        mine = stacks.get(str(pid), [])
        count = sum(c for c, _, _ in mine)
        # half busy at 49 Hz for 5 s: ~120 on an idle machine, far fewer when other
        # work starves the spinner (19 at a load of 27 on 2 cores); a 5 s profile
        # cannot hold more than 49*6
        assert 3 <= count <= 49 * 6, (name, count, agent.describe())
        funcs = {f for _, fs, _ in mine for f in fs}
        assert name + "_work" in funcs and other + "_work" not in funcs, (name, funcs)
        for _, _, labels in mine:
            assert labels.get("service_name") == name, labels
            assert labels.get("python_version") == version, labels
            assert labels.get("node") == "node-a", labels
            assert "thread_id" in labels and "thread_name" in labels, labels
    assert set(stacks) <= {str(p) for p in pids.values()}, "-p let others in: %s" % list(stacks)

    status, headers, path = pull(port, tmp_path, "seconds=5")
    assert status == 200 and headers["Content-Type"] == "application/octet-stream", headers
    prof = Profile(path.read_bytes())
    assert path.read_bytes()[:2] == b"\x1f\x8b", "not gzipped"
    assert 4e9 <= prof.duration_nanos <= 6e9, ("seconds=5 gave a profile of %d ns" %
                                               prof.duration_nanos)
    assert abs(prof.time_nanos / 1e9 - (time.time() - 5)) < 2.5, prof.time_nanos

    for name, (pid, _) in svc.items():       # ?service= and ?pid= keep one service each
        for query in ("seconds=5&service=" + urllib.parse.quote(name), "seconds=5&pid=%d" % pid):
            status, _, path = pull(port, tmp_path, query)
            assert status == 200, (query, status, path)
            got = by_pid(raw_stacks(go_raw(path, tmp_path)))
            assert list(got) == [str(pid)], (query, list(got))

    for bad in ("seconds=abc", "seconds=-1", "seconds=5&pid=abc", "seconds=1e3x"):
        status, _, body = http_get(port, "/debug/pprof/profile?" + bad)
        assert status == 400, (bad, status, body[:200])
    for path in ("/", "/nope", "/debug/pprof/heap", "/metricsx"):
        status, _, _ = http_get(port, path)
        assert status == 404, (path, status)
    rc, took = agent.stop()
    assert rc == 0 and took < 5, (rc, took, agent.describe())


@pytest.mark.serial
def test_whole_host_and_exclude_pid(start_target, tmp_path, agents):
    """No -p: every Python process on the host (others' too), but not the
    --exclude-pid one."""
    svc = two_services(start_target, tmp_path)
    keep, drop = svc["alpha_svc"][0], svc["beta_svc"][0]
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-F", "49",
                   "--exclude-pid", str(drop))
    agent.wait_http(port)
    time.sleep(max(0, agent.started + 5 - time.time()))
    status, _, path = pull(port, tmp_path, "seconds=3")
    assert status == 200, status
    stacks = by_pid(raw_stacks(go_raw(path, tmp_path)))
    assert str(keep) in stacks and str(drop) not in stacks, (keep, drop, list(stacks))
    assert {l.get("service_name") for _, _, l in stacks[str(keep)]} == {"alpha_svc"}
    assert metrics(port)["pybpfprof_processes"] >= 1
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


# --- 2: metrics, scraped by Prometheus -----------------------------------------------

STAGES = ["discovery", "labels", "naming", "slices", "pprof", "gzip", "http", "other"]


def stage_rows(port):
    """{stage: seconds} of pybpfprof_agent_cpu_seconds_total, and /metrics' text."""
    status, _, body = http_get(port, "/metrics")
    assert status == 200, status
    text = body.decode()
    rows = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^pybpfprof_agent_cpu_seconds_total\{stage="(\w+)"\} (\S+)$', text, re.M)}
    return rows, text


def own_cpu_s(pid):
    """utime + stime of /proc/PID/stat, and one tick per field: they are whole ticks, cut."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, 2.0 / tick


def test_cpu_per_stage(start_target, tmp_path, agents):
    """Where the agent's CPU goes: one pybpfprof_agent_cpu_seconds_total row
    per stage (one HELP and TYPE for them all); after samples and a pull,
    naming, pprof encoding and gzip have cost something, and the rows sum
    to no more than the process's own CPU time (they count each second
    once). One interpreter: the counters are the agent's, not a layout's."""
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "delta_svc")
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-F", "49", "-p", str(pid))
    agent.wait_http(port)
    deadline = time.monotonic() + 20
    while metrics(port)["pybpfprof_samples_total"] < 20 and time.monotonic() < deadline:
        time.sleep(0.5)
    status, _, path = pull(port, tmp_path, "seconds=5")
    assert status == 200, (status, path)
    rows, text = stage_rows(port)
    cpu, slack = own_cpu_s(agent.proc.pid)
    assert sorted(rows) == sorted(STAGES), text
    assert text.count("# TYPE pybpfprof_agent_cpu_seconds_total counter") == 1, text
    for stage in ("naming", "pprof", "gzip"):
        assert rows[stage] > 0, (stage, rows)
    assert sum(rows.values()) <= cpu + slack, (rows, sum(rows.values()), cpu)
    later, _ = stage_rows(port)
    assert all(later[s] >= rows[s] for s in STAGES), (rows, later)     # counters
    # the longest pull is the history, max(60 s, 2 x --interval): past it, 400 saying so
    status, _, body = http_get(port, "/debug/pprof/profile?seconds=61")
    assert status == 400 and b"(1 to 60)" in body, (status, body)
    assert http_get(port, "/debug/pprof/profile?seconds=60")[0] == 200
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


def test_metrics_scraped_by_prometheus(start_target, tmp_path, agents):
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.skip("prometheus not installed (Debian: prometheus)")
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "gamma_svc")
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-F", "49", "-p", str(pid))
    agent.wait_http(port)
    status, headers, body = http_get(port, "/metrics")
    assert status == 200, status
    assert headers["Content-Type"].replace(" ", "").startswith("text/plain;version=0.0.4"), \
        headers["Content-Type"]
    m = metrics(port)
    missing = [n for n in METRICS if n not in m]
    assert not missing, "missing from /metrics: %s\n%s" % (missing, body.decode()[:3000])
    assert m["process_resident_memory_bytes"] > 1 << 20, m
    assert m["pybpfprof_pushes_total"] == 0 and m["pybpfprof_queue_windows"] == 0, m

    prom = Prometheus("127.0.0.1:%d" % port)
    try:
        prom.wait_ready()
        deadline = time.monotonic() + 20
        first = []
        while not first and time.monotonic() < deadline:
            first = [v for _, v in prom.query("pybpfprof_samples_total")]
            time.sleep(0.5)
        assert first, "Prometheus never got pybpfprof_samples_total: %s\n%s" % (
            prom.targets(), prom.log_text())
        second = first      # a later scrape (one a second) counts more samples
        while sum(second) <= sum(first) and time.monotonic() < deadline + 10:
            time.sleep(0.5)
            second = [v for _, v in prom.query("pybpfprof_samples_total")]
        assert sum(second) > sum(first), (first, second)
        procs = prom.query("pybpfprof_processes")
        assert sum(v for _, v in procs) == 1, procs
        [target] = prom.targets()
        assert target["health"] == "up" and not target["lastError"], target
    finally:
        prom.close()
    assert not os.path.exists(prom.dir)
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


# --- 3: push ------------------------------------------------------------------------------

def attempts_by_window(receiver, service=None):
    """{(service, from): [status, ...]} in arrival order."""
    out = collections.OrderedDict()
    for a in receiver.snapshot():
        if service is None or a.service == service:
            out.setdefault(a.key, []).append(a.status)
    return out


def check_pushed(a, tmp_path, service, pid, node, hz):
    """One accepted push: its query, headers and profile."""
    q = a.query
    assert a.service == service and a.labels.get("node") == node, a
    assert q.get("spyName") == "pybpfprof" and q.get("format") == "pprof", q
    # Pyroscope ignores sampleRate for format=pprof (the profile's period counts)
    assert q.get("sampleRate", str(hz)) == str(hz), q
    assert a.profile.period == round(1e9 / hz), (a.profile.period, hz)
    assert a.start < a.end, a
    assert a.headers.get("Content-Type") == "application/octet-stream", a.headers
    assert a.body[:2] == b"\x1f\x8b", "body not gzipped"
    path = tmp_path / ("push-%s-%s.pb.gz" % (service, q["from"]))
    path.write_bytes(a.body)
    stacks = raw_stacks(go_raw(path, tmp_path))
    assert stacks, a
    for count, funcs, labels in stacks:
        assert labels.get("pid") == str(pid) and labels.get("service_name") == service, labels
    funcs = {f for _, fs, _ in stacks for f in fs}
    assert service + "_work" in funcs, funcs
    # the profile's own time is the window's: Pyroscope uses it, not from/until
    assert abs(a.profile.time_nanos / 1e9 - a.start) <= 1.5, (a.profile.time_nanos, a.start)


def test_push_series_retries_and_refusals(start_target, tmp_path, agents, receivers):
    """alpha_svc answered 503 for its first 6 s (retried until it arrives),
    beta_svc always 400 (each window tried once, never again)."""
    svc = two_services(start_target, tmp_path)
    t503 = []

    def policy(a):
        if a.service == "beta_svc":
            return 400
        if a.service == "alpha_svc" and time.time() < t503[0]:
            return 503
        return None
    rec = receivers(policy)
    port = free_port()
    t503.append(time.time() + 6)
    agent = agents(tmp_path, "--push", rec.url, "--interval", "2", "--node", "node-p",
                   "--tenant", "team-a", "--basic-auth", "user:pa:ss", "-F", "49",
                   "--listen", "127.0.0.1:%d" % port, "--queue-size", "64",
                   "-p", "%d,%d" % (svc["alpha_svc"][0], svc["beta_svc"][0]))

    def retried_and_arrived(r):
        w = attempts_by_window(r, "alpha_svc")
        return [k for k, st in w.items() if st[0] == 503 and st[-1] == 200]
    got = rec.wait(retried_and_arrived, 25)
    assert got, "no alpha_svc window answered 503 arrived later: %s\n%s" % (
        dict(attempts_by_window(rec)), agent.describe())
    rec.wait(lambda r: len(attempts_by_window(r, "beta_svc")) >= 4, 10)
    time.sleep(2)

    alpha = attempts_by_window(rec, "alpha_svc")
    for key, statuses in alpha.items():
        assert statuses.count(200) <= 1, ("window pushed twice", key, statuses)
        assert all(s in (200, 503) for s in statuses), (key, statuses)
    beta = attempts_by_window(rec, "beta_svc")
    assert len(beta) >= 3, (beta, agent.describe())
    for key, statuses in beta.items():
        assert statuses == [400], ("400 must not be retried", key, statuses)
    assert not [a for a in rec.snapshot() if a.status not in (200, 400, 503)], rec.snapshot()

    basic = "Basic " + base64.b64encode(b"user:pa:ss").decode()
    ok = rec.ok()
    for a in ok:
        assert a.headers.get("X-Scope-OrgID") == "team-a", a.headers
        assert a.headers.get("Authorization") == basic, a.headers
        assert a.end - a.start <= 3, a
    check_pushed(ok[-1], tmp_path, "alpha_svc", svc["alpha_svc"][0], "node-p", 49)

    m = metrics(port)
    assert m["pybpfprof_pushes_total"] >= len(ok), m
    assert m["pybpfprof_push_errors_total"] >= len(beta), m
    assert m["pybpfprof_push_bytes_total"] >= sum(len(a.body) for a in ok), m
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()
    assert "level=" in agent.log() and "msg=" in agent.log(), agent.log()[-2000:]
    # windows follow each other without overlapping: [from, until) of one
    # window ends where the next begins
    spans = sorted((a.start, a.end) for a in ok)
    for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
        assert e0 <= s1, ("windows overlap", spans)


RETRY = re.compile(r'^ts=(\S+)Z level=\w+ msg="?push failed, will retry.* retry_in_ms=(\d+)', re.M)


def retries(log):
    """The agent's announced retries: [(wall time it failed, wall time it tries again)]."""
    out = []
    for ts, ms in RETRY.findall(log):
        failed = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        out.append((failed, failed + int(ms) / 1e3))
    return out


@pytest.mark.serial
def test_push_outage(start_target, tmp_path, agents, receivers):
    """The receiver's port closed: the newest windows wait in the queue and
    arrive once it is back, once each; the oldest are dropped and counted.
    The receiver comes back a little before a retry the agent's log
    announces (retry_in_ms), one due when more windows than the queue holds
    have been cut since the outage began: some must have been dropped, and
    windows of the outage are still queued when the agent tries again.
    Waiting for the retry instead of a fixed outage longer than the queue
    and the longest backoff (60 s, one after the other) took 50 s more."""
    interval, queue = 1, 6
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "delta_svc")
    rec = receivers()
    port = free_port()
    agent = agents(tmp_path, "--push", rec.url, "--interval", interval, "--queue-size", queue,
                   "-F", "49", "--listen", "127.0.0.1:%d" % port, "-p", str(pid))
    assert rec.wait(lambda r: r.ok(), 15), agent.describe()
    rec.stop()
    down = time.time()
    retry = None
    while retry is None and time.time() < down + 90:
        time.sleep(0.2)
        now = time.time()
        due = [at for failed, at in retries(agent.log())
               if failed >= down - 0.5 and at >= down + (queue + 8) * interval and at >= now + 1]
        retry = due[0] if due else None
    assert retry, ("no retry announced past the queue's length", agent.describe())
    # up with (queue - 2) windows cut before the retry: the oldest of the
    # queue then are the outage's
    time.sleep(max(0, retry - (queue - 2) * interval - time.time()))
    rec.start()
    up = time.time()
    assert up < retry, ("back %.1f s after the retry: the test woke late" % (up - retry))
    # nothing is pushed before the retry: the queue is still the outage's
    m = metrics(port)
    if time.time() < retry - 0.1:
        assert m["pybpfprof_queue_windows"] >= queue - 1 and m["pybpfprof_queue_bytes"] > 0, m
    assert m["pybpfprof_push_dropped_windows_total"] > 0, m

    def drained(r):
        # the queue is first in, first out: a window cut after `up` means it is empty
        return any(a.start >= up + interval for a in r.ok())
    assert rec.wait(drained, 45, step=0.5), (
        "nothing pushed within 45 s of the receiver's return: %s\n%s" % (
            rec.snapshot()[-5:], agent.describe()))
    arrived = time.time() - up
    keys = collections.Counter(a.key for a in rec.ok())
    assert not [k for k, n in keys.items() if n > 1], ("pushed twice", keys)
    queued = sorted(a.start for a in rec.ok() if down <= a.start < up)
    assert 1 <= len(queued) <= queue + 1, ("outage windows that arrived", queued, down, up)
    assert queued[0] >= down + 3 * interval, (
        "the oldest windows should have been dropped", [q - down for q in queued])
    m = metrics(port)
    assert m["pybpfprof_push_dropped_windows_total"] >= 1, m
    assert m["pybpfprof_queue_windows"] <= 1, m
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()
    print("outage: %.1f s, %d windows queued and pushed %.1f s after the receiver returned"
          % (up - down, len(queued), arrived))


@pytest.mark.serial
def test_sigterm_pushes_last_window(start_target, tmp_path, agents, receivers):
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "omega_svc")
    rec = receivers()
    token = tmp_path / "token"
    token.write_text("s3cr3t-token\n")
    agent = agents(tmp_path, "--push", rec.url, "--interval", "30", "--bearer-token-file",
                   str(token), "-p", str(pid))
    time.sleep(4)
    sent = time.time()
    rc, took = agent.stop(timeout=10)
    assert rc == 0, (rc, agent.describe())
    assert took <= 5.5, "exit %.1f s after SIGTERM" % took
    last = [a for a in rec.snapshot() if a.t >= sent]
    assert len(last) == 1 and last[0].status == 200, (rec.snapshot(), agent.describe())
    a = last[0]
    assert a.t - sent <= 5, "last window arrived %.1f s after SIGTERM" % (a.t - sent)
    assert a.headers.get("Authorization") == "Bearer s3cr3t-token", a.headers
    assert a.end >= sent - 1.5, ("the last window ends before SIGTERM", a, sent)
    check_pushed(a, tmp_path, "omega_svc", pid, socket.gethostname(), 19)


def test_service_names_from_command_lines(tmp_path, agents, receivers):
    """{script} as docs/agent.md says, and every name one Pyroscope takes:
    `python3 "/x/my svc+v2.py"` -> my_svc_v2, `python3 -m pkgdemo.mod` ->
    pkgdemo.mod, `python3 -c ...` -> the command name."""
    interp = interps(1)[0]
    spin = SPIN.format(func="named_work")
    odd = tmp_path / "my svc+v2.py"
    odd.write_text(spin)
    pkg = tmp_path / "pkgdemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(spin)
    procs = []
    try:
        for args in ([str(odd)], ["-m", "pkgdemo.mod"], ["-c", spin]):
            procs.append(subprocess.Popen(interp.argv + args, cwd=str(tmp_path),
                                          stdin=null(), start_new_session=True))
        deadline = time.monotonic() + 10
        while b"-c" not in open("/proc/%d/cmdline" % procs[2].pid, "rb").read().split(b"\0"):
            assert time.monotonic() < deadline, "python -c never exec'd"
            time.sleep(0.02)     # still the forked pytest: its comm is not python's yet
        with open("/proc/%d/comm" % procs[2].pid) as f:
            comm = f.read().strip()
        want = {procs[0].pid: "my_svc_v2", procs[1].pid: "pkgdemo.mod", procs[2].pid: comm}
        rec = receivers()
        port = free_port()
        agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "--push", rec.url,
                       "--interval", "2", "-F", "49", "-p", ",".join(map(str, want)))
        agent.wait_http(port)
        assert rec.wait(lambda r: {a.service for a in r.ok()} >= set(want.values()), 15), (
            "pushed: %s, expected %s" % (sorted({(a.service, a.status) for a in rec.snapshot()}),
                                        sorted(want.values())), agent.describe())
        assert not [a for a in rec.snapshot() if a.status != 200], rec.snapshot()
        status, _, path = pull(port, tmp_path, "seconds=3")
        assert status == 200, status
        for pid, stacks in by_pid(raw_stacks(go_raw(path, tmp_path))).items():
            for _, _, labels in stacks:
                assert labels.get("service_name") == want[int(pid)], (pid, labels, want)
        rc, _ = agent.stop()
        assert rc == 0, agent.describe()
    finally:
        for p in procs:
            p.kill()
            p.wait()


# --- 4: the environment --------------------------------------------------------------------

@pytest.mark.serial
def test_options_from_environment(start_target, tmp_path, agents, receivers):
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "env_svc")
    rec = receivers()
    p1, p2, p3 = free_port(), free_port(), free_port()
    env = {"PYBPFPROF_LISTEN": "127.0.0.1:%d" % p1, "PYBPFPROF_INTERVAL": "1",
           "PYBPFPROF_PUSH": rec.url, "PYBPFPROF_SERVICE_NAME": "env-{script}-{pid}",
           "PYBPFPROF_NODE": "env-node", "NODE_NAME": "not-this-one"}
    a1 = agents(tmp_path, "-p", str(pid), env=env)
    # the command line wins over the environment; -p, -m and -F from it too
    a2 = agents(tmp_path, "--listen", "127.0.0.1:%d" % p2,
                env={"PYBPFPROF_LISTEN": "127.0.0.1:%d" % p3, "PYBPFPROF_PID": str(pid),
                     "PYBPFPROF_MODE": "wall", "PYBPFPROF_FREQUENCY": "29"})
    a1.wait_http(p1)
    a2.wait_http(p2)
    with pytest.raises(OSError):
        http_get(p3, "/healthz", timeout=2)
    service = "env-env_svc-%d" % pid
    assert rec.wait(lambda r: len(r.ok()) >= 3, 10), (rec.snapshot(), a1.describe())
    for a in rec.ok():
        assert a.service == service and a.labels.get("node") == "env-node", a
    time.sleep(max(0, a2.started + 3.5 - time.time()))
    status, _, path = pull(p2, tmp_path, "seconds=2")
    assert status == 200, status
    prof = Profile(path.read_bytes())
    assert prof.sample_types == [("samples", "count"), ("wall", "nanoseconds")], prof.sample_types
    assert prof.period == round(1e9 / 29), prof.period
    pids = {l.get("pid") for s in prof.samples for l in [prof.all_labels(s)]}
    assert pids == {str(pid)}, pids
    for a in (a1, a2):
        rc, _ = a.stop()
        assert rc == 0, a.describe()
    # one window a second: pushes a second apart, each of one second
    ok = sorted(rec.ok(), key=lambda a: a.t)
    assert all(b.t - a.t < 1.8 for a, b in zip(ok[1:], ok[2:])), [a.t for a in ok]
    for a in ok:
        assert a.start <= a.end <= a.start + 1, ("PYBPFPROF_INTERVAL=1: a window of 1 s", a)


@pytest.mark.parametrize("args,env,word", [
    ([], {"PYBPFPROF_INTERVAL": "abc"}, "PYBPFPROF_INTERVAL"),
    ([], {"PYBPFPROF_INTERVAL": "0"}, "PYBPFPROF_INTERVAL"),
    ([], {"PYBPFPROF_LISTEN": "127.0.0.1:notaport"}, "PYBPFPROF_LISTEN"),
    ([], {"PYBPFPROF_LOG_LEVEL": "loud"}, "PYBPFPROF_LOG_LEVEL"),
    (["--interval", "0"], {}, "interval"),
    (["--interval", "2x"], {}, "interval"),
    (["--listen", "127.0.0.1:70000"], {}, "listen"),
    (["--queue-size", "0"], {}, "queue-size"),
    (["--rescan", "0.5"], {}, "rescan"),
    ([], {"PYBPFPROF_RESCAN": "3601"}, "PYBPFPROF_RESCAN"),
    (["--max-memory", "-5"], {}, "max-memory"),
    (["--log-level", "loud"], {}, "log-level"),
    (["--push", "not a url"], {}, "push"),
])
def test_bad_values_are_usage_errors(args, env, word):
    full = dict((k, v) for k, v in os.environ.items() if not k.startswith("PYBPFPROF_"))
    full.update(env)
    r = subprocess.run([PYBPFPROF, "agent"] + args, capture_output=True, text=True, env=full,
                       timeout=20)
    assert r.returncode == 2, (args, env, r.returncode, r.stderr)
    lines = [l for l in r.stderr.split("Try `")[0].splitlines() if l.strip()]
    assert lines and word in lines[0], (args, env, r.stderr)
    assert len(lines) == 1, ("one clear line (and argp's --help hint) expected", r.stderr)


# --- 5: Kubernetes names from OCI bundles -------------------------------------------------

RUNTIMES = {
    # runtime: (cgroup scope prefix, bundle path under the host root, annotation keys)
    "containerd": ("cri-containerd-", "run/containerd/io.containerd.runtime.v2.task/k8s.io/%s",
                   ("io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
                    "io.kubernetes.cri.container-name")),
    "cri-o": ("crio-", "run/containers/storage/overlay-containers/%s/userdata",
              ("io.kubernetes.pod.namespace", "io.kubernetes.pod.name",
               "io.kubernetes.container.name")),
}


def make_pod(root, host_root, runtime, names):
    """A pod-like cgroup (systemd driver naming) and the container's OCI
    bundle config.json: (cgroup dirs to remove deepest first, container id, pod uid)."""
    prefix, bundle, keys = RUNTIMES[runtime]
    pod = str(uuid.uuid4())
    cid = uuid.uuid4().hex + uuid.uuid4().hex
    rel = ["kubepods.slice", "kubepods-burstable.slice",
           "kubepods-burstable-pod%s.slice" % pod.replace("-", "_"), "%s%s.scope" % (prefix, cid)]
    dirs = [os.path.join(root, *rel[:k]) for k in range(1, len(rel) + 1)]
    made = [d for d in dirs if not os.path.isdir(d)]
    os.makedirs(dirs[-1], exist_ok=True)
    bdir = os.path.join(host_root, bundle % cid)
    os.makedirs(bdir)
    annotations = dict(zip(keys, names))
    annotations["io.kubernetes.cri.container-type" if runtime == "containerd"
                else "io.kubernetes.cri-o.ContainerType"] = "container"
    with open(os.path.join(bdir, "config.json"), "w") as f:
        json.dump({"ociVersion": "1.0.2", "process": {"args": ["python3"]},
                   "annotations": annotations}, f)
    return list(reversed(made)), cid, pod


@pytest.mark.serial
def test_kubernetes_labels(start_target, tmp_path, agents):
    roots = cgroup_roots()
    if not roots:
        pytest.skip("no writable cgroup hierarchy")
    root = roots[0][0]
    host_root = str(tmp_path / "host")
    pods = {"containerd": ("shop", "cart-7d9f8-x2x4q", "cart"),
            "cri-o": ("batch", "etl-1-abcde", "worker")}
    a, b = interps(2)
    made, procs = [], {}
    try:
        for runtime, interp in (("containerd", a), ("cri-o", b)):
            dirs, cid, pod = make_pod(root, host_root, runtime, pods[runtime])
            made += dirs
            pid, _ = start_service(start_target, tmp_path, interp, "k8s_%s" % runtime.replace("-", ""))
            with open(os.path.join(dirs[0], "cgroup.procs"), "w") as f:
                f.write(str(pid))
            procs[runtime] = (pid, cid, pod)
        port = free_port()
        agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "--host-root", host_root,
                       "-F", "49", "-p", ",".join(str(p[0]) for p in procs.values()),
                       env={"NODE_NAME": "k8s-node-1"})
        agent.wait_http(port)
        time.sleep(max(0, agent.started + 5 - time.time()))
        status, _, path = pull(port, tmp_path, "seconds=3")
        assert status == 200, (status, path)
        stacks = by_pid(raw_stacks(go_raw(path, tmp_path)))
        for runtime, (pid, cid, pod) in procs.items():
            ns, podname, container = pods[runtime]
            mine = stacks.get(str(pid))
            assert mine, (runtime, list(stacks), agent.describe())
            for _, _, labels in mine:
                want = {"namespace": ns, "pod": podname, "container": container,
                        "container_id": cid, "pod_uid": pod, "node": "k8s-node-1",
                        "service_name": "%s/%s" % (ns, container)}
                assert {k: labels.get(k) for k in want} == want, (runtime, labels)
        status, _, path = pull(port, tmp_path, "seconds=3&service=" + urllib.parse.quote(
            "shop/cart", safe=""))
        assert status == 200, status
        got = by_pid(raw_stacks(go_raw(path, tmp_path)))
        assert list(got) == [str(procs["containerd"][0])], list(got)
        rc, _ = agent.stop()
        assert rc == 0, agent.describe()
    finally:
        remove_made_dirs(made, start_target.procs)
        shutil.rmtree(host_root, ignore_errors=True)


# --- 6: what idle processes cost -------------------------------------------------------

IDLE = """
import os, threading, time
for _ in range(2):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
ready = os.environ["PBP_READY"]
with open(ready + ".tmp", "w") as f:
    f.write('{"pid": %d}' % os.getpid())
os.replace(ready + ".tmp", ready)
time.sleep(3600)
"""
RESCAN = 4          # s: the agent's --rescan, for what it does once a minute by default
LOOKS = 3           # of them watched, each seen under strace


def looks_seen(text, pids):
    """How many looks strace saw: the fewest of /proc's listings and of each pid's signal 0."""
    return min([text.count('"/proc", O_')] + [text.count("kill(%d, 0)" % q) for q in pids])


def test_idle_processes_read_nothing(start_target, tmp_path, agents):
    """Idle processes (3 sleeping threads each) are read when found and
    then never again: over LOOKS of the agent's looks (--rescan RESCAN: at
    all of /proc, at every target's life, the labels' refresh, thread
    lists twice as often), pybpfprof_process_reads_total stays put and,
    under strace attached once they are found, none of their /proc files
    is opened while /proc is listed and each is sent its signal 0 LOOKS
    times (the looks happened). One interpreter: the rule is the agent's,
    not a layout's."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace not installed (Debian: strace)")
    script = tmp_path / "idle.py"
    script.write_text(IDLE)
    pids = [start_target(interps(1)[0], str(script))[1] for _ in range(3)]
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "--rescan", str(RESCAN),
                   "-p", ",".join(map(str, pids)))
    agent.wait_http(port)
    deadline = time.monotonic() + 20
    m = metrics(port)
    while (m["pybpfprof_processes"] < 3 or time.time() < agent.started + 4) \
            and time.monotonic() < deadline:
        time.sleep(0.5)
        m = metrics(port)
    assert m["pybpfprof_processes"] == 3, (m, agent.describe())
    found = m["pybpfprof_process_reads_total"]
    assert found > 0, m     # discovery read them: the counter counts
    log = tmp_path / "strace.log"
    tracer = subprocess.Popen([strace, "-f", "-qq", "-e", "trace=openat,kill", "-o", str(log),
                               "-p", str(agent.proc.pid)], stdin=null(), stdout=null(), stderr=null())
    try:
        deadline = time.monotonic() + RESCAN * (LOOKS + 1) + 20
        while looks_seen(log.read_text() if log.exists() else "", pids) < LOOKS \
                and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1.5)         # a label refresh or list read due at the last look: done
        m = metrics(port)
    finally:
        tracer.send_signal(2)   # detached: the agent's exit is its own
        tracer.wait(20)
    text = log.read_text()
    assert m["pybpfprof_processes"] == 3, m
    assert m["pybpfprof_process_reads_total"] == found, (found, m)
    opened = [line for line in text.splitlines() if any("/proc/%d/" % q in line for q in pids)]
    assert opened == [], opened[:5]
    assert looks_seen(text, pids) >= LOOKS, ("the looks did not happen", looks_seen(text, pids),
                                             agent.describe())
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()
