"""pybpfprof-agent.service and /etc/default/pybpfprof-agent
(deploy/systemd/), against docs/install.md and the program.

- the unit is hardened as docs/install.md says, and its capabilities are
  exactly those its table lists, bounding and ambient alike;
- the defaults file sets only PYBPFPROF_* variables that name options of
  `pybpfprof agent --help`, and listens on 127.0.0.1;
- `systemd-analyze verify` finds nothing to say, and `systemd-analyze
  security --offline` gives the score docs/install.md reports (both on a root that
  holds the unit and the binary where the package puts them);
- the agent started as the unit starts it (a user that is not root, with
  the unit's capabilities as ambient ones and nothing else in its bounding
  set, the defaults file as its environment) samples a Python and ends with
  0 on SIGTERM, well within TimeoutStopSec.

No systemd runs here (PID 1 is not systemd), so the last is setpriv's doing,
not the service manager's; the package test installs the unit for real."""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from agent_receiver import free_port
from agent_run import http_get, metrics
from conftest import PYBPFPROF, REPO
from nulldev import null

UNIT = os.path.join(REPO, "deploy", "systemd", "pybpfprof-agent.service")
DEFAULTS = os.path.join(REPO, "deploy", "systemd", "pybpfprof-agent.default")
INSTALL_DOC = os.path.join(REPO, "docs", "install.md")
SPIN = """
import time
def service_spin():
    while True:
        sum(range(1000))
print("ready", flush=True)
service_spin()
"""


def unit():
    """{key: [values]} of the [Service] section (and the others: keys are distinct)."""
    out = {}
    with open(UNIT) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", ";", "[")):
                k, v = line.split("=", 1)
                out.setdefault(k, []).append(v)
    return out


def defaults():
    out = {}
    with open(DEFAULTS) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                out[k] = v
    return out


def readme_service():
    with open(INSTALL_DOC) as f:
        text = f.read()
    return text.split("## The agent as a systemd service", 1)[1].split("\n## ", 1)[0]


def readme_caps():
    """The capabilities of docs/install.md's table of the service's capabilities."""
    return set(re.findall(r"^\| `(CAP_[A-Z_]+)` \|", readme_service(), re.M))


def test_unit_hardening_and_capabilities():
    u = unit()
    caps = readme_caps()
    assert caps, "no table of capabilities in docs/install.md's service section"
    assert set(u["CapabilityBoundingSet"][0].split()) == caps
    assert set(u["AmbientCapabilities"][0].split()) == caps
    assert u["ExecStart"] == ["/usr/bin/pybpfprof agent"]
    assert u["EnvironmentFile"] == ["-/etc/default/pybpfprof-agent"]
    for key, value in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                       ("ProtectHome", "read-only"), ("PrivateTmp", "yes"),
                       ("SystemCallArchitectures", "native"), ("Restart", "on-failure"),
                       ("DynamicUser", "yes"), ("ProcSubset", "all")]:
        assert u.get(key) == [value], key
    assert set(u["RestrictAddressFamilies"][0].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    assert re.fullmatch(r"\d+M", u["MemoryMax"][0])
    # The agent promises the last push within 5 s of SIGTERM.
    assert int(u["TimeoutStopSec"][0]) > 5


def test_defaults_name_agent_options():
    d = defaults()
    assert d["PYBPFPROF_LISTEN"].startswith("127.0.0.1:")
    help_text = subprocess.run([PYBPFPROF, "agent", "--help"], capture_output=True,
                               universal_newlines=True, timeout=10).stdout
    with open(DEFAULTS) as f:
        named = set(re.findall(r"^#?(PYBPFPROF_[A-Z0-9_]+)=", f.read(), re.M))
    for var in named:
        opt = "--" + var[len("PYBPFPROF_"):].lower().replace("_", "-")
        assert opt in help_text, (var, opt)


def fake_root(tmp_path):
    """A root holding the unit and the binary where the package puts them,
    beside the host's units (the targets it is ordered against)."""
    root = tmp_path / "root"
    (root / "lib/systemd").mkdir(parents=True)
    shutil.copytree("/lib/systemd/system", str(root / "lib/systemd/system"), symlinks=True)
    (root / "usr/bin").mkdir(parents=True)
    (root / "etc/default").mkdir(parents=True)
    shutil.copy(UNIT, str(root / "lib/systemd/system/pybpfprof-agent.service"))
    shutil.copy(PYBPFPROF, str(root / "usr/bin/pybpfprof"))
    shutil.copy(DEFAULTS, str(root / "etc/default/pybpfprof-agent"))
    return root


def test_systemd_analyze(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed (Debian: systemd)")
    root = fake_root(tmp_path)
    path = str(root / "lib/systemd/system/pybpfprof-agent.service")
    # man:pybpfprof(1) is looked up with man(1) on the host: not under --root.
    verify = ["systemd-analyze", "verify", "--man=no", "--root=%s" % root, path]
    r = subprocess.run(verify, capture_output=True, universal_newlines=True, timeout=60)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
    # It does look: without the binary, the same unit fails.
    os.rename(str(root / "usr/bin/pybpfprof"), str(root / "usr/bin/pybpfprof.away"))
    r = subprocess.run(verify, capture_output=True, universal_newlines=True, timeout=60)
    assert r.returncode != 0 and "/usr/bin/pybpfprof" in r.stderr, r.stderr
    os.rename(str(root / "usr/bin/pybpfprof.away"), str(root / "usr/bin/pybpfprof"))
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager",
                        "--root=%s" % root, path],
                       capture_output=True, universal_newlines=True, timeout=60)
    m = re.search(r"Overall exposure level for pybpfprof-agent.service: (\d+\.\d+) (\w+)",
                  r.stdout)
    assert m, r.stdout[-2000:] + r.stderr
    assert "`systemd-analyze security` scores it %s (%s)" % (m.group(1), m.group(2)) \
        in readme_service().replace("\n", " "), m.group(0)


@pytest.mark.serial
def test_agent_runs_as_the_unit_runs_it(tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv (util-linux)")
    caps = ",".join("+" + c[len("CAP_"):].lower() for c in sorted(readme_caps()))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYBPFPROF_")}
    env.update(defaults())
    env["PYBPFPROF_LISTEN"] = "127.0.0.1:%d" % port
    env["PYBPFPROF_FREQUENCY"] = "49"
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    target = subprocess.Popen(["/usr/bin/python3", str(script)], stdout=subprocess.PIPE,
                              universal_newlines=True)
    err = open(str(tmp_path / "agent.stderr"), "w+")
    agent = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "--inh-caps=-all," + caps, "--ambient-caps=-all," + caps,
         "--bounding-set=-all," + caps, PYBPFPROF, "agent"],
        env=env, stdin=null(), stdout=err, stderr=err, start_new_session=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        samples = 0
        while time.monotonic() < deadline and samples < 20:
            assert agent.poll() is None, "agent exited %s: %s" % (agent.returncode, log(err))
            try:
                samples = metrics(port).get("pybpfprof_samples_total", 0)
            except OSError:
                pass
            time.sleep(0.3)
        assert samples >= 20, log(err)
        status, _, body = http_get(port, "/debug/pprof/profile?seconds=1", timeout=30)
        assert status == 200 and body[:2] == b"\x1f\x8b", (status, body[:200])
        with open("/proc/%d/status" % agent.pid) as f:
            st = f.read()
        assert re.search(r"^Uid:\s+65534\s", st, re.M), st
        t = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(15) == 0, log(err)
        assert time.monotonic() - t < 5, log(err)
    finally:
        target.kill()
        target.wait()
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
            agent.wait()


def log(f):
    f.seek(0)
    return f.read()[-3000:]
