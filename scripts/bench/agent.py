"""Scenario agent (once, not per interpreter): what `pybpfprof agent` costs
on a node, with processes of every pyenv version 3.6-3.13 side by side.

  alone   the agent with none of them: its RSS, and its CPU, which is what
          the machine's own process churn (other people's execs and exits)
          costs it
  idle    agent_idle_procs processes asleep (three threads each): the
          agent's CPU after discovery, as a share of one core, its RSS, and
          the reads of their memory after discovery (none expected)
  memory  the same processes killed: the agent's RSS agent_gone_s later,
          against its RSS before any was there
  busy    agent_busy_procs processes, a third spinning, a third asleep, a
          third starting a thread ten times a second, pushed every 15 s to
          a receiver on 127.0.0.1 and pulled every 30 s: CPU share, and CPU
          per sample delivered (start-up excluded), and of it each stage's
          (pybpfprof_agent_cpu_seconds_total{stage=...}, the agent's own
          thread-clock counters: discovery, labels, naming, slices, pprof,
          gzip, http, other)

The agent's CPU is its own (utime + stime of /proc/PID/stat) between two
instants, so the load of a shared machine shows as spread, not as cost; the
load average is kept with the row. The processes are told apart from the
machine's others by their command name (--comm)."""

import http.server
import os
import subprocess
import threading
import time
import urllib.request

from common import DEPTH, PBP, Figure, log
from targets import discover, kill, spawn

COMM = "pbpbenchagent"
VERSIONS = ["3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]
PORT = 4199


def _cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return None


STAGES = ["discovery", "labels", "naming", "slices", "pprof", "gzip", "http", "other"]


def _metrics():
    """{name: value}; a labelled row as name{labels} (the stages' CPU)."""
    out = {}
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % PORT, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(None, 1)
                out[name] = float(value)
    return out


def _stage_s(m, stage):
    return m.get('pybpfprof_agent_cpu_seconds_total{stage="%s"}' % stage, 0.0)


class _Sink(object):
    """A push receiver that takes everything: /ingest answers 200."""

    def __init__(self):
        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def _start_agent(bench, *extra):
    err = open(bench.out("agent-stderr"), "w")
    p = subprocess.Popen([PBP, "agent", "--listen", "127.0.0.1:%d" % PORT, "--comm", "^%s$" % COMM,
                          "--log-level", "warn"] + list(extra),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    err.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            _metrics()
            return p
        except OSError:
            time.sleep(0.2)
    p.kill()
    raise RuntimeError("pybpfprof agent did not answer on port %d" % PORT)


def _stop(p):
    p.terminate()
    try:
        p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()


def _spawn_mixed(its, n, kind):
    env = {"PBP_BENCH_COMM": COMM}
    procs = []
    for i in range(n):
        it = its[i % len(its)]
        k = kind(i) if callable(kind) else kind
        args = [k] if k in ("idle3",) else [k, DEPTH] if k in ("spin", "churn") else [k]
        procs.append(spawn(it, *args, env=env)[0])
    return procs


def _wait_procs(n, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _metrics().get("pybpfprof_processes", 0) >= n:
            return True
        time.sleep(1)
    return False


def _window(p, secs, every=None):
    """The agent's CPU share of one core over secs, with every(t) called each second."""
    c0, m0, t0 = _cpu_s(p.pid), _metrics(), time.monotonic()
    while time.monotonic() - t0 < secs:
        time.sleep(1)
        if every:
            every(time.monotonic() - t0)
    c1, m1, t1 = _cpu_s(p.pid), _metrics(), time.monotonic()
    return (c1 - c0) / (t1 - t0), m0, m1, c1 - c0


def agent(bench):
    cfg = bench.cfg
    its, missing = discover(VERSIONS)
    if missing:
        log("agent: not measured on %s" % ", ".join(n for n, _ in missing))
    for it in its:
        it.setup("agent-" + it.name)
    figs = {k: [] for k in ("base", "alone", "idle", "idle_rss", "idle_reads", "gone_rss", "busy", "busy_us", "busy_marg_us")
            + tuple("stage_" + st for st in STAGES)}
    load = []
    try:
        for rep in range(cfg["agent_reps"]):
            # idle, then memory once they are gone
            p = _start_agent(bench)
            try:
                time.sleep(cfg["agent_warm_s"])
                figs["alone"].append(_window(p, cfg["agent_alone_s"])[0] * 100)
                base = _rss_mb(p.pid)
                n = cfg["agent_idle_procs"]
                procs = _spawn_mixed(its, n, "idle3")
                if not _wait_procs(n):
                    log("agent: only %s of %d processes found" % (_metrics().get("pybpfprof_processes"), n))
                time.sleep(cfg["agent_warm_s"])
                share, m0, m1, _ = _window(p, cfg["agent_idle_s"])
                figs["base"].append(base)
                figs["idle"].append(share * 100)
                figs["idle_rss"].append(_rss_mb(p.pid))
                figs["idle_reads"].append(m1["pybpfprof_process_reads_total"] -
                                          m0["pybpfprof_process_reads_total"])
                for q in procs:
                    kill(q)
                time.sleep(cfg["agent_gone_s"])
                figs["gone_rss"].append(_rss_mb(p.pid))
            finally:
                _stop(p)
            # busy: pushed and pulled
            sink = _Sink()
            p = _start_agent(bench, "--push", "http://127.0.0.1:%d" % sink.port, "--interval", "15")
            try:
                n = cfg["agent_busy_procs"]
                procs = _spawn_mixed(its, n, lambda i: ("spin", "idle3", "churn")[i % 3])
                _wait_procs(n)
                time.sleep(cfg["agent_warm_s"])

                def pull(t):
                    if int(t) % 30 == 29:
                        urllib.request.urlopen("http://127.0.0.1:%d/debug/pprof/profile?seconds=30" % PORT,
                                               timeout=30).read()
                share, m0, m1, cpu = _window(p, cfg["agent_busy_s"], pull)
                samples = m1["pybpfprof_samples_total"] - m0["pybpfprof_samples_total"]
                figs["busy"].append(share * 100)
                figs["busy_us"].append(cpu / samples * 1e6 if samples else None)
                # What the samples cost over what the node's churn costs the agent alone
                alone = figs["alone"][-1] / 100 * cfg["agent_busy_s"]
                figs["busy_marg_us"].append((cpu - alone) / samples * 1e6 if samples else None)
                # Where it went, per sample delivered: the agent's own per-stage counters
                for st in STAGES:
                    figs["stage_" + st].append((_stage_s(m1, st) - _stage_s(m0, st)) / samples * 1e6
                                               if samples else None)
                for q in procs:
                    kill(q)
            finally:
                _stop(p)
                sink.stop()
            load.append(os.getloadavg()[0])
    finally:
        for it in its:
            it.cleanup()
    n, b = cfg["agent_idle_procs"], cfg["agent_busy_procs"]
    out = [
        Figure("agent_base_mb", "agent alone: RSS", "MB", figs["base"], "%.1f"),
        Figure("agent_alone_pct", "agent alone: CPU, % of a core (the node's own churn)", "%",
               figs["alone"], "%.3f"),
        Figure("agent_idle_pct", "%d idle processes: agent CPU, %% of a core" % n, "%", figs["idle"], "%.3f"),
        Figure("agent_idle_reads", "%d idle: reads of their memory after discovery" % n, "",
               figs["idle_reads"], "%.0f"),
        Figure("agent_idle_kb", "%d idle: RSS over the alone figure, per process" % n, "KB",
               [(r - figs["base"][i]) * 1024 / n for i, r in enumerate(figs["idle_rss"])], "%.0f"),
        Figure("agent_gone_pct", "%d s after they exit: RSS over the alone figure" % cfg["agent_gone_s"], "%",
               [(r / figs["base"][i] - 1) * 100 for i, r in enumerate(figs["gone_rss"])], "%.1f"),
        Figure("agent_busy_pct", "%d busy/idle/churning, push 15 s, pull 30 s: CPU, %% of a core" % b, "%",
               figs["busy"], "%.3f"),
        Figure("agent_busy_us", "... agent CPU per sample delivered, all of it", "µs", figs["busy_us"], "%.1f"),
        Figure("agent_busy_marg_us", "... per sample, over what the agent alone took", "µs",
               figs["busy_marg_us"], "%.1f"),
    ]
    stages = [Figure("agent_stage_" + st, "... of it in %s" % st, "µs", figs["stage_" + st], "%.2f")
              for st in STAGES]
    bench.agent_figs = out + stages
    bench.agent_row = "| %s | %d | %s | %s | load %s |" % (
        time.strftime("%Y-%m-%d", time.gmtime()), len(its), " | ".join(f.cell() for f in out),
        "/".join(f.cell() for f in stages), "/".join("%.1f" % x for x in load))
