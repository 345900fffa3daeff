"""The agent case of `make soak` (scripts/soak.py runs it; root).

    SOAK_AGENT_SECONDS=1800 SOAK_AGENT_PROCS=50 scripts/soak.py agent

Runs `pybpfprof agent --push --listen` for SOAK_AGENT_SECONDS (default 30
minutes) while SOAK_AGENT_PROCS (default 50) Python processes of every
interpreter found start and stop: each lives 5-60 s and is replaced when it
ends, so processes (and their caches) keep arriving and leaving. Every 30 s
it records the agent's RSS, fds, CPU and /metrics in bench/soak-agent.csv and
pulls a 10 s profile. It fails when RSS or fds grow, the agent uses 1 % of a
core or more, pushes stop, a window arrives twice, or SIGTERM does not end
the agent with 0 within 5 s.
"""

import csv
import glob
import gzip
import http.server
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYBPFPROF = os.environ.get("PYBPFPROF") or os.path.join(REPO, "build", "pybpfprof")
CSV = os.path.join(REPO, "bench", "soak-agent.csv")
SID_CHROOT = "/var/cache/pybpfprof/sid-chroot"
EVERY = 30.0
INTERVAL = 15
LIFE = (5.0, 60.0)
RSS_GROWTH = 1.10
FD_SLACK = 2
CPU_LIMIT = 0.01
METRICS = ("pybpfprof_samples_total", "pybpfprof_processes", "pybpfprof_pushes_total",
           "pybpfprof_push_dropped_windows_total", "pybpfprof_history_bytes")

# The three kinds of target: on CPU, off CPU, and one that keeps starting
# threads (new thread states for the agent to find and forget).
WORKLOAD = r'''
import sys, threading, time
kind, life = sys.argv[1], float(sys.argv[2])
end = time.time() + life
def spin(until):
    n = 0
    while time.time() < until:
        n += 1
def work():
    if kind == "busy":
        spin(end)
    elif kind == "sleep":
        while time.time() < end:
            time.sleep(0.5)
    else:
        while time.time() < end:
            ts = [threading.Thread(target=spin, args=(time.time() + 0.2,)) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            time.sleep(0.3)
work()
'''


def interpreters():
    """[(argv prefix, root)]: pyenv's 3.6+, Debian's 3.11, and the sid chroot's
    when its /proc is mounted (by an integration session: mounting it here
    would race that session's unmount)."""
    found = []
    root = os.environ.get("PYENV_ROOT") or "/root/.pyenv"
    for exe in sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3"))):
        if os.access(exe, os.X_OK):
            found.append(([exe], "/"))
    if os.access("/usr/bin/python3.11", os.X_OK):
        found.append((["/usr/bin/python3.11"], "/"))
    if os.path.exists(os.path.join(SID_CHROOT, "proc", "self")):
        for exe in ("/usr/bin/python3.13", "/usr/bin/python3.14"):
            if os.access(SID_CHROOT + exe, os.X_OK):
                found.append((["chroot", SID_CHROOT, exe], SID_CHROOT))
    return found


class Fleet:
    """SOAK_AGENT_PROCS slots, each running one short-lived target at a time.
    Script names are per slot and kind (svc07_busy.py), so the agent sees
    many services; each root gets its own copy of the scripts."""

    def __init__(self, n, interps):
        self.interps = interps
        self.procs = [None] * n
        self.ends = [0.0] * n
        self.started = 0
        self.dirs = {}
        for _, root in interps:
            if root not in self.dirs:
                self.dirs[root] = tempfile.mkdtemp(prefix="pbp-soak-agent-",
                                                   dir=os.path.join(root, "tmp"))

    def script(self, root, slot, kind):
        path = os.path.join(self.dirs[root], "svc%02d_%s.py" % (slot, kind))
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(WORKLOAD)
        return "/" + os.path.relpath(path, root)

    def start(self, slot):
        argv, root = random.choice(self.interps)
        kind = random.choice(("busy", "sleep", "threads"))
        life = random.uniform(*LIFE)
        self.procs[slot] = subprocess.Popen(
            argv + [self.script(root, slot, kind), kind, "%.1f" % life],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.ends[slot] = time.monotonic() + life + 10
        self.started += 1

    def tick(self):
        """Replace the targets that ended; kill one that outlived its life."""
        for slot, p in enumerate(self.procs):
            if p is not None and p.poll() is None and time.monotonic() > self.ends[slot]:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            if p is None or p.poll() is not None:
                self.start(slot)

    def stop(self):
        for p in self.procs:
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for d in self.dirs.values():
            shutil.rmtree(d, ignore_errors=True)


class Receiver(http.server.BaseHTTPRequestHandler):
    """Pyroscope's /ingest, as far as the soak needs it: 200 to every push,
    counting pushes and bytes and the (name, from) windows seen twice."""
    lock = threading.Lock()
    pushes = 0
    bytes = 0
    seen = set()
    dups = []
    names = set()

    # Keep-alive, as Pyroscope's server: the agent's pushes reuse a connection.
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(url.query)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        key = (q.get("name", [""])[0], q.get("from", [""])[0])
        with Receiver.lock:
            Receiver.pushes += 1
            Receiver.bytes += len(body)
            Receiver.names.add(key[0])
            if key in Receiver.seen:
                Receiver.dups.append(key)
            Receiver.seen.add(key)
        self.send_response(200 if url.path == "/ingest" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def start_receiver():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stats(pid):
    """RSS (KiB), open fds and CPU seconds of pid, from /proc."""
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    fds = len(os.listdir("/proc/%d/fd" % pid))
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, fds, cpu


def metrics(base):
    """The /metrics values soak watches (unlabelled series only)."""
    out = dict.fromkeys(METRICS, 0.0)
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            name, _, value = line.partition(" ")
            if name in out:
                out[name] = float(value)
    return out


def pull_ok(base):
    """A 10 s pull answers 200 with gzip; the error when not."""
    try:
        with urllib.request.urlopen(base + "/debug/pprof/profile?seconds=10", timeout=30) as r:
            gzip.decompress(r.read())
            return "" if r.status == 200 else "status %d" % r.status
    except (OSError, EOFError) as e:
        return str(e)


def sample(agent, base, t0, fleet):
    rss, fds, cpu = proc_stats(agent.pid)
    row = {"seconds": round(time.monotonic() - t0, 1), "rss_kb": rss, "fds": fds,
           "cpu_s": round(cpu, 2), "targets_started": fleet.started,
           "received": Receiver.pushes, "received_bytes": Receiver.bytes}
    row.update(metrics(base))
    row["pull"] = pull_ok(base) or "ok"
    return row


def write_csv(rows):
    os.makedirs(os.path.dirname(CSV), exist_ok=True)
    with open(CSV, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def stop_agent(agent):
    """SIGTERM; the exit status and how long it took, or None if it hung."""
    t = time.monotonic()
    agent.send_signal(signal.SIGTERM)
    try:
        agent.wait(timeout=5)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent.wait()
        return None, time.monotonic() - t
    return agent.returncode, time.monotonic() - t


def thirds(rows, key):
    n = max(1, len(rows) // 3)
    return max(r[key] for r in rows[:n]), max(r[key] for r in rows[-n:])


def verdicts(rows, seconds, cpu_s, exit_status, exit_took):
    """[(what, figure, limit, ok)]: the pass criteria, one row each."""
    out = []
    first, last = thirds(rows, "rss_kb")
    out.append(("RSS KiB, max first/last third", "%d / %d" % (first, last),
                "<= %d" % (first * RSS_GROWTH), last <= first * RSS_GROWTH))
    first, last = thirds(rows, "fds")
    out.append(("fds, max first/last third", "%d / %d" % (first, last),
                "<= %d" % (first + FD_SLACK), last <= first + FD_SLACK))
    out.append(("CPU, share of a core", "%.2f %%" % (100 * cpu_s / seconds),
                "< %g %%" % (100 * CPU_LIMIT), cpu_s / seconds < CPU_LIMIT))
    # Every 30 s sample spans two 15 s windows: pushes_total must have grown.
    stalls = sum(1 for a, b in zip(rows, rows[1:])
                 if b["pybpfprof_pushes_total"] <= a["pybpfprof_pushes_total"])
    out.append(("samples where pushes_total did not grow", str(stalls), "0", stalls == 0))
    out.append(("pushes received (services)", "%d (%d)" % (Receiver.pushes, len(Receiver.names)),
                ">= %d" % (seconds // INTERVAL - 1), Receiver.pushes >= seconds // INTERVAL - 1))
    dropped = rows[-1]["pybpfprof_push_dropped_windows_total"]
    out.append(("dropped windows", "%g" % dropped, "0", dropped == 0))
    out.append(("windows received twice", str(len(Receiver.dups)), "0", not Receiver.dups))
    bad = [r["seconds"] for r in rows if r["pull"] != "ok"]
    out.append(("pulls not 200 + gzip", str(len(bad)), "0", not bad))
    out.append(("exit on SIGTERM", "%s in %.1f s" % (exit_status, exit_took), "0 in < 5 s",
                exit_status == 0))
    return out


def run():
    seconds = float(os.environ.get("SOAK_AGENT_SECONDS", "1800"))
    nprocs = int(os.environ.get("SOAK_AGENT_PROCS", "50"))
    if seconds < 3 * EVERY:
        raise SystemExit("soak: SOAK_AGENT_SECONDS must be at least %d" % (3 * EVERY))
    interps = interpreters()
    receiver = start_receiver()
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    log = tempfile.NamedTemporaryFile(prefix="pbp-soak-agent-", suffix=".log")
    fleet = Fleet(nprocs, interps)
    fleet.tick()
    agent = subprocess.Popen([PYBPFPROF, "agent", "--push",
                              "http://127.0.0.1:%d" % receiver.server_address[1],
                              "--interval", str(INTERVAL), "--listen", "127.0.0.1:%d" % port,
                              "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=log)
    print("soak: agent (pid %d) for %g s, %d targets over %d interpreters: %s" % (
        agent.pid, seconds, nprocs, len(interps), " ".join(a[-1] for a, _ in interps)),
        flush=True)
    rows, failures = [], []
    t0 = time.monotonic()
    # Killed (Ctrl-C, kill): the finally below still ends the agent and the fleet.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak: terminated"))
    try:
        next_at = t0 + EVERY
        while time.monotonic() - t0 < seconds and agent.poll() is None:
            fleet.tick()
            time.sleep(0.5)
            if time.monotonic() < next_at:
                continue
            next_at += EVERY
            rows.append(sample(agent, base, t0, fleet))
            print("soak: %(seconds)6.0f s  rss %(rss_kb)6d KiB  fds %(fds)3d  cpu %(cpu_s)6.2f s  "
                  "processes %(pybpfprof_processes)3g  pushes %(pybpfprof_pushes_total)5g  "
                  "received %(received)5d  pull %(pull)s" % rows[-1], flush=True)
            write_csv(rows)
        elapsed = time.monotonic() - t0
        alive = agent.poll() is None
        cpu_s = proc_stats(agent.pid)[2] if alive else 0.0
        status, took = stop_agent(agent) if alive else (agent.returncode, 0.0)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        fleet.stop()
        receiver.shutdown()
    if not alive:
        failures.append("the agent died (exit %s) after %.0f s" % (agent.returncode, elapsed))
    if len(rows) < 3:
        failures.append("too few samples: %d" % len(rows))
    else:
        print("soak: %-42s %-18s %-12s" % ("check", "figure", "limit"))
        for what, figure, limit, ok in verdicts(rows, elapsed, cpu_s, status, took):
            print("soak: %-42s %-18s %-12s %s" % (what, figure, limit, "ok" if ok else "FAILED"))
            if not ok:
                failures.append("%s: %s (limit %s)" % (what, figure, limit))
    log.seek(0)
    tail = log.read().decode(errors="replace").strip().splitlines()[-10:]
    if failures and tail:
        print("soak: the agent's last log lines:\n  " + "\n  ".join(tail), flush=True)
    print("soak: %d targets started; samples in %s" % (fleet.started, os.path.relpath(CSV, REPO)))
    return failures
