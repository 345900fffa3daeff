"""A real Prometheus (Debian's /usr/bin/prometheus) scraping one target
every second, in a temporary directory that goes with it."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from agent_receiver import free_port
from nulldev import null

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

CONFIG = """global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: agent
    static_configs:
      - targets: ["%s"]
"""


class Prometheus(object):
    def __init__(self, target):
        self.dir = tempfile.mkdtemp(prefix="pbp-prom-")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(CONFIG % target)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=null(),
            start_new_session=True)

    def get(self, path, **params):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read()

    def wait_ready(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited %s:\n%s" % (self.proc.returncode,
                                                                    self.log_text()))
            try:
                self.get("/-/ready")
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("prometheus not ready after %gs:\n%s" % (timeout, self.log_text()))

    def query(self, expr):
        """[(labels, value)] of an instant query."""
        data = json.loads(self.get("/api/v1/query", query=expr))
        assert data["status"] == "success", data
        return [(r["metric"], float(r["value"][1])) for r in data["data"]["result"]]

    def targets(self):
        return json.loads(self.get("/api/v1/targets"))["data"]["activeTargets"]

    def log_text(self):
        self.log.flush()
        with open(os.path.join(self.dir, "log")) as f:
            return f.read()[-3000:]

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
