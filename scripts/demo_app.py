#!/usr/bin/python3
"""The workload `make demo` profiles: a small service, standard library only.

Threads, each named so the profile can tell them apart:
  http-server   http.server on 127.0.0.1 (a free port), answering JSON
  http-client   urllib hammering that server and decoding its answers
  log-parser    turns log lines into records with re, and records into JSON
  batcher       waits on a queue (a lock) for the parser's records, flushes
                them every so often, sleeps in between
  hasher        checksums large buffers with hashlib, which releases the GIL
  MainThread    waits for SIGTERM or SIGINT

Prints one line, "ready PID PORT", on stdout once every thread runs. Exits on
SIGTERM/SIGINT, or by itself after --timeout seconds (default 300) so that it
can never be left behind for long.
"""

import argparse
import ctypes
import hashlib
import http.server
import json
import os
import queue
import random
import re
import signal
import sys
import threading
import time
import urllib.parse
import urllib.request

STOP = threading.Event()

# --------------------------------------------------------------- the service

PRODUCTS = [
    {"id": i, "name": "item-%04d" % i, "price": round(1 + (i * 37 % 1000) / 7, 2),
     "tags": ["t%d" % (i % 7), "t%d" % (i % 11)], "stock": i * 13 % 97}
    for i in range(400)
]


class CatalogHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        page = int(query.get("page", ["0"])[0])
        size = int(query.get("size", ["50"])[0])
        tag = query.get("tag", [None])[0]
        items = [p for p in PRODUCTS if tag is None or tag in p["tags"]]
        body = json.dumps({"page": page, "total": len(items),
                           "items": items[page * size:(page + 1) * size]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass    # no access log on the terminal


def serve(server):
    server.serve_forever(poll_interval=0.2)


def client(port):
    # No proxy, whatever the environment says: the server is on loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    rng = random.Random(1)
    while not STOP.is_set():
        url = "http://127.0.0.1:%d/items?page=%d&size=%d&tag=t%d" % (
            port, rng.randrange(4), rng.choice((20, 50, 100)), rng.randrange(7))
        try:
            with opener.open(url, timeout=10) as r:
                data = json.loads(r.read())
        except OSError:
            if STOP.is_set():
                return      # the server went first
            raise
        if sum(p["stock"] for p in data["items"]) < 0:
            raise AssertionError("negative stock")


# --------------------------------------------------------------- log parsing

LINE = re.compile(r'(?P<ip>\d+\.\d+\.\d+\.\d+) - - \[(?P<ts>[^\]]+)\] '
                  r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.[01]" (?P<status>\d{3}) (?P<size>\d+)')
METHODS = ("GET", "GET", "GET", "POST", "PUT", "DELETE")
PATHS = ("/items", "/items/%d", "/cart/%d/checkout", "/search?q=item-%d", "/static/app.%d.js")


def make_lines(rng, n):
    out = []
    for _ in range(n):
        path = rng.choice(PATHS)
        if "%d" in path:
            path = path % rng.randrange(1000)
        out.append('10.0.%d.%d - - [12/Mar/2024:10:%02d:%02d +0000] "%s %s HTTP/1.1" %d %d' % (
            rng.randrange(256), rng.randrange(256), rng.randrange(60), rng.randrange(60),
            rng.choice(METHODS), path, rng.choice((200, 200, 200, 304, 404, 500)),
            rng.randrange(100000)))
    return out


def parse_line(line):
    m = LINE.match(line)
    if not m:
        return None
    rec = m.groupdict()
    rec["status"] = int(rec["status"])
    rec["size"] = int(rec["size"])
    # Module-level re functions: the pattern cache in re/__init__.py each time.
    rec["route"] = re.sub(r"/\d+", "/{id}", rec["path"])
    rec["static"] = re.search(r"\.(js|css|png)$", rec["path"]) is not None
    return rec


def parser(out):
    rng = random.Random(2)
    while not STOP.is_set():
        records = [r for r in map(parse_line, make_lines(rng, 1000)) if r]
        # Pretty-printed JSON goes through json/encoder.py's Python encoder.
        text = json.dumps(records, indent=2, sort_keys=True)
        back = json.loads(text)
        try:
            out.put(back, timeout=1)
        except queue.Full:
            pass


def batcher(inq):
    totals = {}
    while not STOP.is_set():
        try:
            batch = inq.get(timeout=0.5)    # blocks on the queue's lock
        except queue.Empty:
            continue
        for r in batch:
            key = (r["route"], r["status"])
            totals[key] = totals.get(key, 0) + r["size"]
        time.sleep(0.02)    # "flush to storage"


# --------------------------------------------------------------- checksums

def hasher():
    # hashlib releases the GIL for buffers larger than 2 KiB: native code.
    blobs = [os.urandom(4 << 20) for _ in range(4)]
    digests = []
    while not STOP.is_set():
        for b in blobs:
            digests.append(hashlib.sha256(b).hexdigest())
            digests.append(hashlib.blake2b(b).hexdigest())
        del digests[:-64]


# --------------------------------------------------------------- main

def die_with_parent():
    """SIGTERM when the process that started us (demo.sh) dies, however it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeout", type=float, default=300,
                    help="exit after this many seconds (default 300)")
    args = ap.parse_args()

    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *a: STOP.set())
    signal.signal(signal.SIGINT, lambda *a: STOP.set())

    server = http.server.HTTPServer(("127.0.0.1", 0), CatalogHandler)
    port = server.server_address[1]
    records = queue.Queue(maxsize=4)
    threads = [
        threading.Thread(target=serve, args=(server,), name="http-server", daemon=True),
        threading.Thread(target=client, args=(port,), name="http-client", daemon=True),
        threading.Thread(target=parser, args=(records,), name="log-parser", daemon=True),
        threading.Thread(target=batcher, args=(records,), name="batcher", daemon=True),
        threading.Thread(target=hasher, name="hasher", daemon=True),
    ]
    for t in threads:
        t.start()
    print("ready %d %d" % (os.getpid(), port), flush=True)

    STOP.wait(args.timeout)
    STOP.set()
    server.shutdown()
    for t in threads:
        t.join(timeout=5)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
