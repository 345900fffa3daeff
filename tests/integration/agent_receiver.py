"""A stand-in for Grafana Pyroscope's push endpoint, POST /ingest, that
takes what Pyroscope takes and refuses what it refuses, with the same
status codes, and remembers every attempt for the tests to look at.

What Pyroscope does (github.com/grafana/pyroscope, checked at 3fe6a457):
  route        POST /ingest and /pyroscope/ingest (pkg/api/api.go)
  name         SERVICE{key=value,...}: values unquoted, ',' and '}' end a
               value; service name [A-Za-z0-9_.-/]+, label names [A-Za-z0-9_.]+
               (api/model/labelset): else 400
  from, until  attime.Parse: digits are Unix seconds (13 digits ms, 16 us,
               19 ns, 8 digits a YYYYMMDD date)
  format=pprof the whole body is the pprof, gzipped or not (ingest_handler.go,
               og/convert/pprof/profile.go)
  the profile  pkg/validation ValidateProfile: 422 when it fails
  tenant       X-Scope-OrgID
A policy hook lets a test answer some attempts with its own status (503,
429, 400...) instead, and stop()/start() close and reopen the port."""

import gzip
import http.server
import re
import socket
import threading
import time
import urllib.parse

from pprof_wire import Profile

SERVICE_RUNES = re.compile(r"^[A-Za-z0-9_./-]+$")
LABEL_RUNES = re.compile(r"^[A-Za-z0-9_.]+$")


def parse_name(name):
    """Pyroscope's labelset.Parse: (service, {label: value}) or ValueError."""
    service, brace, rest = name.partition("{")
    service = service.strip()
    if not service:
        raise ValueError("service name is required")
    if not SERVICE_RUNES.match(service):
        raise ValueError("invalid service name: %r" % service)
    labels = {}
    if brace:
        # keys run to '=', values to ',' or '}'; whatever follows '}' is ignored
        i, key, state = 0, "", "key"
        value = ""
        while i < len(rest):
            c = rest[i]
            if state == "key":
                if c == "}":
                    break
                if c == "=":
                    state, value = "value", ""
                else:
                    key += c
            else:
                if c in ",}":
                    k = key.strip()
                    if not k or not LABEL_RUNES.match(k):
                        raise ValueError("invalid label name: %r" % k)
                    labels[k] = value.strip()
                    key, state = "", "key"
                    if c == "}":
                        break
                else:
                    value += c
            i += 1
    return service, labels


def parse_time(s):
    """pkg/og/util/attime.Parse for the all-digit forms: Unix seconds (float)."""
    s = s.strip().replace("_", "").replace(",", "").replace(" ", "")
    if not s.isdigit():
        raise ValueError("not a Unix time: %r" % s)
    if len(s) == 8:
        raise ValueError("8 digits are a YYYYMMDD date to Pyroscope: %r" % s)
    v = int(s)
    return {13: v / 1e3, 16: v / 1e6, 19: v / 1e9}.get(len(s), float(v))


class Attempt(object):
    """One POST as the receiver saw it."""

    def __init__(self, path, query, headers, body):
        self.t = time.time()
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.status = None
        self.error = None       # why the receiver refused it
        self.service = None
        self.labels = {}
        self.start = self.end = None
        self.profile = None

    @property
    def key(self):
        """What tells one pushed window from another: (service, from)."""
        return (self.service, self.query.get("from"))

    def __repr__(self):
        return "<%s %s from=%s until=%s -> %s%s>" % (
            self.service, self.labels, self.query.get("from"), self.query.get("until"),
            self.status, " (%s)" % self.error if self.error else "")


class Receiver(object):
    """receiver = Receiver(); receiver.url; receiver.attempts; receiver.ok()"""

    def __init__(self, policy=None, port=0):
        self.policy = policy          # policy(attempt) -> status to answer instead, or None
        self.attempts = []
        self.lock = threading.Lock()
        self.port = port
        self.server = None
        self.thread = None
        self.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                receiver._post(self)

            def do_GET(self):
                self._plain(405 if self.path.split("?")[0].endswith("/ingest") else 404)

            def _plain(self, status, text=""):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        """Close the port: connections are refused until start()."""
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(5)
            self.server = None

    def _post(self, h):
        path, _, qs = h.path.partition("?")
        query = dict(urllib.parse.parse_qsl(qs, keep_blank_values=True))
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        a = Attempt(path, query, dict(h.headers.items()), body)
        status, err = self._judge(a)
        a.status, a.error = status, err
        with self.lock:
            self.attempts.append(a)
        h._plain(status, err or "")

    def _judge(self, a):
        """(status, error) as Pyroscope would answer, unless the policy says otherwise."""
        if a.path not in ("/ingest", "/pyroscope/ingest"):
            return 404, "no such path %s" % a.path
        try:
            a.service, a.labels = parse_name(a.query.get("name", ""))
        except ValueError as e:
            return 400, "name: %s" % e
        try:
            a.start = parse_time(a.query["from"]) if "from" in a.query else None
            a.end = parse_time(a.query["until"]) if "until" in a.query else None
        except ValueError as e:
            return 400, str(e)
        if self.policy:
            status = self.policy(a)
            if status:
                return status, "policy"
        if a.query.get("format") != "pprof":
            return 400, "this receiver takes format=pprof only, got %r" % a.query.get("format")
        try:
            a.profile = Profile(a.body)
        except (ValueError, IndexError, KeyError, UnicodeDecodeError, OSError,
                EOFError, gzip.BadGzipFile) as e:
            return 422, "malformed profile: %s" % e
        problem = a.profile.problem(time.time_ns())
        if problem:
            return 422, problem
        return 200, None

    # --- what tests ask ------------------------------------------------------

    def snapshot(self):
        with self.lock:
            return list(self.attempts)

    def ok(self):
        return [a for a in self.snapshot() if a.status == 200]

    def wait(self, cond, timeout, step=0.1):
        """Poll until cond(self) is true; its last value."""
        deadline = time.monotonic() + timeout
        while True:
            v = cond(self)
            if v or time.monotonic() > deadline:
                return v
            time.sleep(step)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
