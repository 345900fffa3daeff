"""Running `pybpfprof agent` in the tests: the agent process, its HTTP
endpoints, the services it profiles, and `go tool pprof -raw` read back."""

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import PYBPFPROF, _discover
from nulldev import null

# A service: a script of its own name spinning in a function of its own,
# half the time (the machine's two cores are shared).
SERVICE = '''
import json, os, sys, time
def {func}():
    while True:
        t = time.monotonic() + 0.02
        while time.monotonic() < t:
            sum(range(200))
        time.sleep(0.02)
ready = os.environ["PBP_READY"]
with open(ready + ".tmp", "w") as f:
    json.dump({{"pid": os.getpid(), "version": list(sys.version_info[:3])}}, f)
os.replace(ready + ".tmp", ready)
{func}()
'''


def interps(n=2):
    """n interpreters not in a chroot: PBP_INTERPS's first, else 3.13 and
    3.11-debian-static, else any."""
    usable = [i for i in _discover() if not i.skip_reason and not i.chrooted]
    want = [x.strip() for x in os.environ.get("PBP_INTERPS", "").split(",") if x.strip()]
    chosen = [i for w in (want or ["3.13", "3.11-debian-static"]) for i in usable if i.name == w]
    chosen += [i for i in usable if i not in chosen]
    if len(chosen) < n:
        pytest.skip("needs %d interpreters outside a chroot, have %s" % (
            n, [i.name for i in usable]))
    return chosen[:n]


def start_service(start_target, tmp_path, interp, name):
    """Start script NAME.py (function NAME_work) on interp: (pid, "X.Y.Z")."""
    d = tmp_path / name
    d.mkdir()
    script = d / (name + ".py")
    script.write_text(SERVICE.format(func=name + "_work"))
    proc, pid, ready = start_target(interp, str(script))
    return pid, "%d.%d.%d" % tuple(ready["version"])


class Agent(object):
    """One `pybpfprof agent` process; stderr in a file."""

    def __init__(self, tmp_path, *args, env=None, name="agent"):
        if not os.access(PYBPFPROF, os.X_OK):
            pytest.fail("%s is not built (make all)" % PYBPFPROF, pytrace=False)
        self.args = [str(a) for a in args]
        self.err_path = str(tmp_path / (name + ".stderr"))
        self.out_path = str(tmp_path / (name + ".stdout"))
        full_env = dict(os.environ)
        for k in list(full_env):
            if k.startswith("PYBPFPROF_") or k == "NODE_NAME":
                del full_env[k]
        full_env.update(env or {})
        with open(self.err_path, "w") as err, open(self.out_path, "w") as out:
            self.proc = subprocess.Popen([PYBPFPROF, "agent"] + self.args, stdout=out,
                                         stderr=err, stdin=null(), env=full_env,
                                         start_new_session=True)
        self.started = time.time()

    def log(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def describe(self):
        return "pybpfprof agent %s\nstderr (tail):\n%s" % (" ".join(self.args),
                                                          self.log()[-3000:])

    def alive(self):
        return self.proc.poll() is None

    def wait_http(self, port, timeout=30):
        """Wait until GET /healthz answers on port."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.alive(), "agent exited %s\n%s" % (self.proc.returncode, self.describe())
            try:
                status, _, body = http_get(port, "/healthz", timeout=2)
                return status, body
            except OSError:
                time.sleep(0.1)
        raise AssertionError("no /healthz on port %d after %gs\n%s" % (
            port, timeout, self.describe()))

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Signal it and wait: (exit code, seconds it took)."""
        t = time.monotonic()
        if self.alive():
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("agent still running %gs after signal %d\n%s" % (
                timeout, sig, self.describe()))
        return rc, time.monotonic() - t

    def kill(self):
        if self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)


def http_get(port, path, timeout=10):
    """(status, headers, body) of GET http://127.0.0.1:port/path; HTTP errors too."""
    url = "http://127.0.0.1:%d%s" % (port, path)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def metrics(port):
    """{name: value} of /metrics, each name's samples summed over labels."""
    status, headers, body = http_get(port, "/metrics")
    assert status == 200, (status, body[:500])
    out = {}
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\d+)?$", line)
        assert m, "not a Prometheus text line: %r" % line
        out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


# --- go tool pprof -raw ------------------------------------------------------------

def go_env(tmp_path):
    return dict(os.environ, HOME=os.environ.get("HOME", "/root"), GOCACHE="/tmp/pbp-gocache",
                GOFLAGS="-mod=mod", PPROF_TMPDIR=str(tmp_path))


def go_raw(source, tmp_path):
    """`go tool pprof -raw SOURCE` (a file or a URL; a fetched profile is
    saved under PPROF_TMPDIR, the test's temporary directory)."""
    go = shutil.which("go") or "/usr/lib/go/bin/go"
    if not os.access(go, os.X_OK):
        pytest.skip("go not installed (Debian: golang-go): cannot read pprof with go tool pprof")
    r = subprocess.run([go, "tool", "pprof", "-raw", str(source)], capture_output=True,
                       text=True, env=go_env(tmp_path), timeout=120)
    assert r.returncode == 0, "go tool pprof -raw %s: %s" % (source, r.stderr)
    return r.stdout


def raw_stacks(raw):
    """`pprof -raw` output -> [(count, [function, leaf first], {label: value})]."""
    funcs = {}
    locs = raw.split("Locations", 1)[1] if "Locations" in raw else ""
    cur = None
    for line in locs.splitlines():
        m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
        if m:
            cur = int(m.group(1))
            funcs[cur] = [m.group(2)]
        elif cur is not None and re.match(r"^\s{10,}(\S+) \S+:\d+", line):
            funcs[cur].append(line.split()[0])
        elif line.strip() and not line.startswith(" "):
            break
    out, sample = [], None
    body = raw.split("Samples:", 1)[1].split("Locations", 1)[0]
    for line in body.splitlines()[2:]:
        m = re.match(r"^\s*(\d+)\s+(-?\d+):((?:\s+\d+)*)\s*$", line)
        if m:
            ids = [int(x) for x in m.group(3).split()]
            sample = (int(m.group(1)), [f for i in ids for f in funcs.get(i, ["?"])], {})
            out.append(sample)
        elif sample is not None and line.strip():
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                sample[2][k] = v
    return out


def by_pid(stacks):
    """{pid: [(count, funcs, labels)]}"""
    out = {}
    for s in stacks:
        out.setdefault(s[2].get("pid"), []).append(s)
    return out


def wait_metrics(port, agent, done, what, timeout=60):
    """/metrics once done(metrics) holds; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    m = metrics(port)
    while not done(m):
        assert time.monotonic() < deadline, "%s: not after %d s: %s\n%s" % (what, timeout, m, agent.describe())
        assert agent.alive(), agent.describe()
        time.sleep(0.3)
        m = metrics(port)
    return m


def remove_made_dirs(made, procs):
    """Kill the test's processes, then remove the cgroup directories it made,
    deepest first, each once the kernel lets it go (the processes' exits
    are reaped a little later)."""
    for proc in list(procs):
        proc.kill()
        proc.wait()
    for d in sorted(set(made), key=lambda d: -d.count("/")):
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                if not os.path.exists(os.path.join(d, "cgroup.procs")) or any(
                        os.path.isdir(os.path.join(d, e)) for e in os.listdir(d)):
                    break       # another test's, or not empty: not ours to wait for
                time.sleep(0.1)
