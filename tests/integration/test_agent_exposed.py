"""The agent safe to expose (issue 31, parts 1 and 3): slow and idle
clients cannot starve /healthz, an oversized request is refused at once, a
bearer token and TLS lock the endpoints (a real curl, a certificate made
with openssl, both rotated while the agent runs), a push server cannot
write into the agent's log, SIGTERM during a hung push exits within 5 s, and
a thread that cannot be made is "out of memory".

The agent profiles the test runner itself (-p): these tests are about its
HTTP side and its pusher, not a Python layout, so each runs once.

Run alone: pytest-3 -q tests/integration/test_agent_exposed.py"""

import http.server
import os
import re
import resource
import selectors
import socket
import ssl
import subprocess
import threading
import time

import pytest

from agent_receiver import free_port
from agent_run import http_get, interps, metrics, start_service
from conftest import PYBPFPROF
from test_agent import agents  # noqa: F401  (the fixture: agents(tmp_path, *args) -> Agent)

CURL = "/usr/bin/curl"
OPENSSL = "/usr/bin/openssl"
HEAD_S = 5          # CLIENTS_HEAD_S in user/agent/clients.h


def listening(agents, tmp_path, *args):
    """An agent serving on 127.0.0.1: (agent, port)."""
    port = free_port()
    a = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-p", str(os.getpid()), *args)
    a.wait_http(port)
    return a, port


def probe(port, timeout=1.0):
    """Seconds GET /healthz took from 127.0.0.1, or None when it got no 200 within timeout."""
    t = time.monotonic()
    try:
        status, _, _ = http_get(port, "/healthz", timeout=timeout)
    except OSError:
        return None
    took = time.monotonic() - t
    return took if status == 200 and took <= timeout else None


# --- 1. slow clients -------------------------------------------------------------------------

class Trickle(object):
    """n sockets from each source address, each sending a request head one
    header line a second and never its end; a socket the agent closes is
    opened again (at most `budget` connections in all)."""

    def __init__(self, port, sources, n, budget):
        self.port, self.budget, self.opened, self.closed = port, budget, 0, 0
        self.sel = selectors.DefaultSelector()
        self.wanted = [src for src in sources for _ in range(n)]
        self.socks = {}
        for src in self.wanted:
            self._open(src)

    def _open(self, src):
        if self.opened >= self.budget:
            return
        s = socket.socket()
        s.setblocking(False)
        s.bind((src, 0))
        s.connect_ex(("127.0.0.1", self.port))
        self.opened += 1
        self.socks[s] = [src, 0]
        self.sel.register(s, selectors.EVENT_READ)

    def _drop(self, s):
        src = self.socks.pop(s)[0]
        self.sel.unregister(s)
        s.close()
        self.closed += 1
        self._open(src)

    def tick(self):
        """One header line on every socket; closed ones replaced."""
        for s, st in list(self.socks.items()):
            line = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" if st[1] == 0 else b"X-%d: y\r\n" % st[1]
            try:
                s.send(line)
                st[1] += 1
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._drop(s)
        for key, _ in self.sel.select(0):
            try:
                if key.fileobj.recv(4096):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            self._drop(key.fileobj)

    def close(self):
        for s in list(self.socks):
            self.sel.unregister(s)
            s.close()
        self.socks = {}


def storm(port, sources, n, seconds, budget):
    """Trickle for `seconds` while /healthz is probed every 0.5 s from
    127.0.0.1: (probe times, None for a failed one; connections opened, closed)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < len(sources) * n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, len(sources) * n + 256), hard))
    tr = Trickle(port, sources, n, budget)
    times, stop = [], threading.Event()

    def prober():
        while not stop.is_set():
            times.append(probe(port))
            stop.wait(0.5)
    t = threading.Thread(target=prober, daemon=True)
    try:
        time.sleep(0.5)         # the sockets are in before the first probe
        t.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            tr.tick()
            time.sleep(1)
    finally:
        stop.set()
        t.join(5)
        tr.close()
    return times, tr.opened, tr.closed


@pytest.mark.serial
def test_slow_clients_cannot_starve_healthz(tmp_path, agents):
    """8 sockets of the probe's own address trickling a header a second
    locked every /healthz out for as long as they trickled (each byte reset
    the 30 s idle timeout, and the 9th connection of an address was
    refused); then 500 from ten other loopback addresses, closed and opened
    again as the agent sheds them."""
    agent, port = listening(agents, tmp_path)
    times, opened, closed = storm(port, ["127.0.0.1"], 8, HEAD_S + 2, 200)
    assert times and None not in times, ("8 slow clients of one address", times,
                                         agent.describe())
    assert closed >= 8, ("a head trickled for %d s was not cut" % (HEAD_S + 2), opened, closed)
    m = metrics(port)      # each probe is a 9th of the address: it sheds a trickler, or 5 s do
    assert m["pybpfprof_http_late_closed_total"] + m["pybpfprof_http_shed_total"] >= 8, m
    sources = ["127.0.0.%d" % i for i in range(2, 12)]
    times, opened, closed = storm(port, sources, 50, HEAD_S + 2, 3000)
    fails = [t for t in times if t is None]
    assert len(times) >= 8 and not fails, ("500 slow clients: %d of %d probes failed"
                                           % (len(fails), len(times)), times, agent.describe())
    print("500 slow clients: /healthz in at most %.3f s; %d connections opened, %d cut"
          % (max(times), opened, closed))
    assert probe(port) is not None
    assert metrics(port)["pybpfprof_http_shed_total"] > 0
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


# --- 2. oversized requests ---------------------------------------------------------------------

def raw_request(port, data, timeout=3):
    """Send data, read the answer: (status or None, seconds)."""
    t = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass        # the agent may answer and close before it read everything
        buf = b""
        try:
            while b"\r\n" not in buf:
                got = s.recv(4096)
                if not got:
                    break
                buf += got
        except socket.timeout:
            return None, time.monotonic() - t
    m = re.match(rb"HTTP/1\.[01] (\d{3})", buf)
    return (int(m.group(1)) if m else None), time.monotonic() - t


def test_oversized_requests_refused_at_once(tmp_path, agents):
    agent, port = listening(agents, tmp_path)
    query = lambda n: "&".join("p%d=1" % i for i in range(n))
    cases = {
        "464 parameters": "GET /debug/pprof/profile?%s HTTP/1.1\r\nHost: x\r\n\r\n" % query(464),
        "2000 parameters": "GET /metrics?%s HTTP/1.1\r\nHost: x\r\n\r\n" % query(2000),
        "a 100 kB path": "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % ("a" * 100000),
        "a 100 kB header": "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % ("b" * 100000),
        "3000 headers": "GET /metrics HTTP/1.1\r\nHost: x\r\n%s\r\n" % "".join(
            "X-%d: y\r\n" % i for i in range(3000)),
    }
    # At once: not held to the 10 s idle timeout (before: 30 s and no answer).
    # A loaded machine took 2.1 s once: 5 s tells the two apart.
    for what, req in cases.items():
        status, took = raw_request(port, req.encode(), timeout=15)
        assert status is not None and 400 <= status < 500 and took < 5, (what, status, took,
                                                                        agent.describe())
    # what the routes take still works, a few parameters too many for them included
    status, _, _ = http_get(port, "/metrics?" + query(30))
    assert status == 200, status
    assert probe(port) is not None
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


# --- 3. bearer token and TLS -------------------------------------------------------------------

def curl(url, *args):
    """A real curl: (HTTP status, 0 when none came; curl's exit code)."""
    r = subprocess.run([CURL, "-s", "-o", "-", "-w", "\n%{http_code}",
                        "--max-time", "5", *args, url], capture_output=True, timeout=20)
    return int(r.stdout.rsplit(b"\n", 1)[-1] or 0), r.returncode


def make_cert(tmp_path, name):
    """A self-signed certificate for 127.0.0.1 and its key: (cert path, key path)."""
    cert, key = tmp_path / (name + ".crt"), tmp_path / (name + ".key")
    r = subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                        "/CN=" + name, "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return cert, key


def served_cert(port):
    """The DER certificate the agent presents now."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        with ctx.wrap_socket(s) as t:
            return t.getpeercert(binary_form=True)


def der(cert):
    return ssl.PEM_cert_to_DER_cert(cert.read_text())


def wait_for(cond, timeout=5):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def replace(path, text):
    """As a Secret volume rotates: a new file renamed over the old."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_token_and_tls(tmp_path, agents):
    """Over HTTPS with a certificate made here, curl with the token gets
    every endpoint, without it (or with a wrong one) 401 but /healthz; a
    token and a certificate rotated while the agent runs are used within
    seconds, and the old token is refused."""
    if not (os.access(CURL, os.X_OK) and os.access(OPENSSL, os.X_OK)):
        pytest.skip("needs curl and openssl (Debian: curl, openssl)")
    token = tmp_path / "token"
    token.write_text("first-token-0123456789\n")
    cert, key = make_cert(tmp_path, "pybpfprof-one")
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-p", str(os.getpid()),
                   "--listen-token-file", str(token), "--tls-cert-file", str(cert),
                   "--tls-key-file", str(key))
    base = "https://127.0.0.1:%d" % port
    tls = ["--cacert", str(cert)]
    assert wait_for(lambda: curl(base + "/healthz", *tls)[0] == 200, 30), agent.describe()
    bearer = ["-H", "Authorization: Bearer first-token-0123456789"]
    for path in ("/metrics", "/debug/pprof/profile?seconds=1"):
        assert curl(base + path, *tls, *bearer)[0] == 200, (path, agent.describe())
        assert curl(base + path, *tls)[0] == 401, path
        assert curl(base + path, *tls, "-H", "Authorization: Bearer first-token-012345678")[0] == 401
        assert curl(base + path, *tls, "-H", "Authorization: Basic Zmlyc3Q=")[0] == 401
    # plain HTTP on the TLS port gets no answer at all
    assert curl("http://127.0.0.1:%d/healthz" % port)[0] == 0

    replace(token, "second-token\n")
    assert wait_for(lambda: curl(base + "/metrics", *tls, "-H",
                                 "Authorization: Bearer second-token")[0] == 200), agent.describe()
    assert curl(base + "/metrics", *tls, *bearer)[0] == 401

    assert served_cert(port) == der(cert)
    cert2, key2 = make_cert(tmp_path, "pybpfprof-two")
    replace(key, key2.read_text())          # the key first: a pair half rotated is not taken
    replace(cert, cert2.read_text())
    assert wait_for(lambda: served_cert(port) == der(cert2)), agent.describe()
    assert curl(base + "/metrics", "--cacert", str(cert2), "-H",
                "Authorization: Bearer second-token")[0] == 200
    assert "level=error" not in agent.log(), agent.log()
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


def client_hello(ctx):
    """The first flight a TLS client sends: its ClientHello."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    try:
        ctx.wrap_bio(inc, out, server_hostname="127.0.0.1").do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def cpu_s(pid):
    """CPU seconds the process has used, its threads together."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tls_probe(port, ctx, timeout=1.0):
    """Seconds GET /healthz over TLS took, or None when it got no 200 within timeout."""
    t = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as ts:
                ts.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                buf = b""
                while b"\r\n\r\nok" not in buf:
                    got = ts.recv(4096)
                    if not got:
                        break
                    buf += got
    except OSError:
        return None
    took = time.monotonic() - t
    return took if buf.startswith(b"HTTP/1.1 200") and took <= timeout else None


def probing(port, ctx, seconds):
    """/healthz over TLS every 0.2 s for `seconds`: the times, None for a failed one."""
    times, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        times.append(tls_probe(port, ctx))
        time.sleep(0.2)
    return times


@pytest.mark.serial
def test_tls_handshake_flood_keeps_healthz(tmp_path, agents):
    """30 clients that send a TLS hello (whole, half, or its first byte)
    and wait: libmicrohttpd's epoll loop spun through them without sleeping
    (half a core for one such client, as long as it waited), and /healthz
    was late 2 times in 30 beside them. Then 30 clients making full
    handshakes at once, over and over: /healthz answers within 1 s all
    along."""
    if not os.access(OPENSSL, os.X_OK):
        pytest.skip("needs openssl (Debian: openssl)")
    cert, key = make_cert(tmp_path, "pybpfprof-flood")
    port = free_port()
    agent = agents(tmp_path, "--listen", "127.0.0.1:%d" % port, "-p", str(os.getpid()),
                   "--tls-cert-file", str(cert), "--tls-key-file", str(key))
    ctx = ssl.create_default_context(cafile=str(cert))
    assert wait_for(lambda: tls_probe(port, ctx, 3) is not None, 30), agent.describe()
    hello = client_hello(ctx)
    stalled = []
    for i in range(30):       # 3 from each address: under the 8 an address may keep waiting
        s = socket.socket()
        s.bind(("127.0.0.%d" % (2 + i % 10), 0))
        s.connect(("127.0.0.1", port))
        s.sendall((hello, hello[:len(hello) // 2], hello[:1])[i % 3])
        stalled.append(s)
    try:
        time.sleep(0.5)
        before = cpu_s(agent.proc.pid)
        times = probing(port, ctx, 3)
        spent = cpu_s(agent.proc.pid) - before
        # waiting costs nothing: what is spent is the probes' own handshakes (before: 1.2 s)
        assert spent < 0.3, ("30 handshakes waiting for their client cost the agent %.2f s "
                             "of CPU in 3 s" % spent, agent.describe())
        assert len(times) >= 8 and None not in times, ("beside 30 waiting handshakes", times)

        stop = threading.Event()

        def handshakes(src):
            while not stop.is_set():
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=3,
                                                  source_address=(src, 0)) as s:
                        ctx.wrap_socket(s, server_hostname="127.0.0.1").close()
                except OSError:
                    pass
        flood = [threading.Thread(target=handshakes, args=("127.0.1.%d" % (1 + i % 10),),
                                  daemon=True) for i in range(30)]
        for t in flood:
            t.start()
        try:
            times = probing(port, ctx, 3)
        finally:
            stop.set()
            for t in flood:
                t.join(5)
        assert len(times) >= 8 and None not in times, ("beside 30 clients making handshakes "
                                                       "at once", times, agent.describe())
        print("TLS flood: waiting handshakes cost %.2f s of CPU in 3 s; /healthz in at most %.3f s"
              % (spent, max(times)))
    finally:
        for s in stalled:
            s.close()
    rc, _ = agent.stop()
    assert rc == 0, agent.describe()


@pytest.mark.parametrize("args,word,code", [
    (["--push", "http://127.0.0.1:9/", "--listen-token-file", "t"], "go with --listen", 2),
    (["--listen", "1", "--tls-cert-file", "c"], "go together", 2),
    (["--listen", "1", "--listen-token-file", "/nonexistent/token"], "cannot read", 10),
    (["--listen", "1", "--listen-token-file", "EMPTY"], "no token", 2),
    (["--listen", "1", "--tls-cert-file", "EMPTY", "--tls-key-file", "EMPTY"], "not a PEM", 2),
])
def test_lock_options_checked(tmp_path, args, word, code):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    args = [str(empty) if a == "EMPTY" else a for a in args]
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("PYBPFPROF_"))
    r = subprocess.run([PYBPFPROF, "agent", "-p", str(os.getpid())] + args, capture_output=True,
                       text=True, env=env, timeout=30)
    assert r.returncode == code, (args, r.returncode, r.stderr)
    lines = [l for l in r.stderr.split("Try `")[0].splitlines() if l.strip()]
    assert len(lines) == 1 and word in lines[0], (args, r.stderr)


# --- 5, 6. what a push server answers; SIGTERM during a hung push --------------------------------

class Answering(object):
    """An ingest that answers every push with the status and body of `reply`
    (status, bytes), or holds the request unanswered when hang is set."""

    def __init__(self, reply=(200, b""), hang=False):
        self.reply, self.hang, self.posts = reply, hang, []
        self.release = threading.Event()
        me = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                me.posts.append(time.monotonic())
                if me.hang:
                    me.release.wait(30)
                    return
                status, body = me.reply
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass        # the agent stopped reading: what it should do with 10 MB

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


FORGED = b'ts=2026-01-01T00:00:00.000Z level=error msg="forged by the push server" admin=yes\n'


def test_push_answer_not_in_log(start_target, tmp_path, agents):
    """The ingest answers a forged logfmt line with 200, then with a 500
    and 10 MB: nothing on stdout, no forged line or pair in the log, each
    answer's start logged as one escaped value."""
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "answered_svc")
    srv = Answering((200, FORGED))
    try:
        agent = agents(tmp_path, "--push", srv.url, "--interval", "1", "--log-level", "debug",
                       "-p", str(pid))
        assert wait_for(lambda: len(srv.posts) >= 2, 15), agent.describe()
        srv.reply = (500, FORGED + b"x" * (10 << 20))
        n = len(srv.posts)
        assert wait_for(lambda: len(srv.posts) >= n + 2, 15), agent.describe()
        time.sleep(0.5)
        rc, _ = agent.stop()
    finally:
        srv.stop()
    assert rc == 0, agent.describe()
    with open(agent.out_path, "rb") as f:
        out = f.read()
    assert out == b"", ("the answer went to stdout", out[:200])
    log = agent.log()
    assert len(log) < 200000, "the answer flooded the log (%d bytes)" % len(log)
    for line in log.splitlines():
        assert line.startswith("ts=") and "forged" not in line.split(" msg=")[0], line
        assert not re.search(r'\badmin=yes', line), ("a forged pair", line)
    said = [l for l in log.splitlines() if "body=" in l]
    assert [l for l in said if "status=500" in l] and [l for l in said if "msg=pushed" in l], said
    for line in said:
        # one logfmt value; read back, the answer's start with every '=', quote and control byte as \xNN
        value = re.search(r' body="((?:[^"\\]|\\.)*)"', line).group(1)
        value = re.sub(r"\\(.)", r"\1", value)
        assert value.startswith(r'ts\x3d2026-01-01T00:00:00.000Z level\x3derror msg\x3d\x22forged'), value
        assert len(value) < 128 * 4 + 8 and len(line) < 1000, line


def test_push_failures_say_why(start_target, tmp_path, agents):
    """A failed push is one line in our words, cause="...", libcurl's own
    wording at most after it as detail: a port nobody listens on is
    "connection refused" (libcurl says "Couldn't connect to server"), a 500
    and a 400 say their status. Three agents side by side, one target."""
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "failing_svc")
    failing, refusing = Answering((500, b"down\n")), Answering((400, b"bad name\n"))
    cases = {"http://127.0.0.1:%d" % free_port(): ('msg="push failed, will retry" cause="connection refused" ',
                                                    "status=0"),
             failing.url: ('msg="push failed, will retry" cause="HTTP status 500" ', "status=500"),
             refusing.url: ('cause="HTTP status 400" ', "status=400")}
    try:
        started = {url: agents(tmp_path, "--push", url, "--interval", "1", "-p", str(pid))
                   for url in cases}
        for url, (said, status) in cases.items():
            a = started[url]
            assert wait_for(lambda: said in a.log(), 20), (url, a.describe())
            [line] = [l for l in a.log().splitlines() if said in l][:1]
            assert status in line and "Couldn't" not in line.split(" detail=")[0], line
            if status == "status=0":
                assert re.search(r' detail="[^"]*127\.0\.0\.1', line), line    # libcurl's, after ours
            else:
                assert ' body="' in line and ' detail="' not in line, line
    finally:
        failing.stop()
        refusing.stop()
    for a in started.values():      # together: each may spend its 3 s on a last push
        a.proc.terminate()
    for a in started.values():
        assert a.proc.wait(10) == 0, a.describe()


def test_push_token_file_a_fifo(start_target, tmp_path, agents):
    """--bearer-token-file naming a FIFO: the push thread must not wait for a
    writer that never comes (it did, forever), nor push without the token
    (it did, once the FIFO was refused): each push fails, said why, and is
    retried with the backoff of any push that got no answer."""
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "fifo_token_svc")
    fifo = tmp_path / "token"
    os.mkfifo(str(fifo))
    srv = Answering()
    try:
        agent = agents(tmp_path, "--push", srv.url, "--interval", "1", "--bearer-token-file", fifo,
                       "-p", str(pid))
        said = 'cause="bearer token file not a regular file"'
        assert wait_for(lambda: said in agent.log(), 20), agent.describe()
        time.sleep(2)
        assert srv.posts == [], "pushed without the token"
        line = [l for l in agent.log().splitlines() if said in l][0]
        assert 'msg="push failed, will retry"' in line, line
        rc, took = agent.stop(timeout=15)
    finally:
        srv.stop()
    assert rc == 0, agent.describe()


def test_sigterm_during_hung_push(start_target, tmp_path, agents):
    """The ingest takes the request and never answers: SIGTERM must still
    end the agent within 5 s (it took 10, the request's own timeout)."""
    pid, _ = start_service(start_target, tmp_path, interps(1)[0], "hung_svc")
    srv = Answering(hang=True)
    try:
        agent = agents(tmp_path, "--push", srv.url, "--interval", "1", "-p", str(pid))
        assert wait_for(lambda: srv.posts, 15), agent.describe()
        time.sleep(0.5)
        rc, took = agent.stop(timeout=15)
    finally:
        srv.stop()
    assert rc == 0 and took <= 5, (rc, took, agent.describe())
    print("SIGTERM during a hung push: exit after %.2f s" % took)


# --- 7. out of memory --------------------------------------------------------------------------

def test_listen_out_of_memory(tmp_path):
    """Under ulimit -v 64 MB the HTTP threads' stacks cannot be mapped: out
    of memory (12), not "cannot listen on that address" (13)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (64 << 20, 64 << 20))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("PYBPFPROF_"))
    r = subprocess.run([PYBPFPROF, "agent", "--listen", "127.0.0.1:%d" % free_port(), "-p",
                        str(os.getpid()), "-d", "1"], capture_output=True, text=True, env=env,
                       timeout=30, preexec_fn=limit)
    lines = [l for l in r.stderr.splitlines() if not l.startswith("ts=")]
    assert r.returncode == 12 and len(lines) == 1 and "out of memory" in lines[0], (
        r.returncode, r.stderr)
