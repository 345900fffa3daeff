"""A target in a real container runtime: podman (runc) runs python3.14 from
the sid chroot, and pybpfprof on the host profiles it by its host pid and
with -a --container=ID.

What this machine needs, and what the test therefore passes to podman (found
with Debian 12's podman 4.3.1, runc 1.1.5, crun 1.8.1):
  --runtime runc     crun 1.8.1 refuses hybrid cgroups ("cgroups in hybrid
                     mode not supported, drop all controllers from cgroupv2")
                     whenever /sys/fs/cgroup/unified/cgroup.controllers is not
                     empty (here it holds "hugetlb"), even with
                     --cgroups=disabled; runc with the cgroupfs manager works
  --ulimit ...       podman asks for RLIMIT_NOFILE/NPROC 1048576 by default;
                     without CAP_SYS_RESOURCE (a sandbox) that is EPERM, so
                     ask for no more than we have
  --rootfs DIR:O     the chroot is the lower layer of an overlay: podman
                     creates /etc/hosts, /run/.containerenv... in a plain
                     --rootfs; with :O the chroot is never written
  --network none     no netavark bridge or iptables rules left on the host
  --root/--runroot/--tmpdir   in a temporary directory: nothing of
                     /var/lib/containers is touched, and it all goes at the end

When podman or runc is missing, or cannot run a container here, every test
skips saying why (PBP_REQUIRE_PODMAN=1 makes that a failure)."""

import os
import re
import resource
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import _discover, nspids, pybpfprof
from profile import func_of, parse_collapsed

REQUIRE = os.environ.get("PBP_REQUIRE_PODMAN", "") not in ("", "0")
FUNC = "podman_target_spin"
TARGET = """
import os, sys, time
def %s(until):
    n = 0
    while time.time() < until:
        n += sum(range(200))
    return n
print(os.getpid(), flush=True)
%s(time.time() + 300)
""" % (FUNC, FUNC)


def _unavailable(why):
    msg = "PODMAN TEST NOT RUN: %s" % why
    if REQUIRE:
        pytest.fail(msg + " (PBP_REQUIRE_PODMAN=1)", pytrace=False)
    pytest.skip(msg)


def _ulimits():
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    # podman 4.3 lowers its own RLIMIT_NPROC to 32768 before starting the
    # runtime, and a container may not raise it again without CAP_SYS_RESOURCE.
    nofile = min(nofile if nofile != resource.RLIM_INFINITY else 1 << 20, 1 << 20)
    nproc = min(nproc if nproc != resource.RLIM_INFINITY else 32768, 32768)
    return ["--ulimit", "nofile=%d:%d" % (nofile, nofile),
            "--ulimit", "nproc=%d:%d" % (nproc, nproc)]


def _our_mounts(prefix):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mnt = line.split()[4]
            if mnt == prefix or mnt.startswith(prefix + "/"):
                out.append(mnt)
    return out


@pytest.fixture(scope="module")
def container():
    """(host pid, container id) of a python3.14 spinning in FUNC inside a
    podman container."""
    for tool in ("podman", "runc"):
        if not shutil.which(tool):
            _unavailable("%s not installed (apt-get install podman runc)" % tool)
    if os.geteuid() != 0:
        _unavailable("needs root")
    sid = next((i for i in _discover() if i.name == "3.14-sid-chroot"), None)
    if sid is None or sid.skip_reason:
        _unavailable("no sid chroot with python3.14 for the container's root: %s"
                     % (sid.skip_reason if sid else "not discovered"))

    tmp = tempfile.mkdtemp(prefix="pbp-podman-")
    podman = ["podman", "--root", os.path.join(tmp, "root"),
              "--runroot", os.path.join(tmp, "run"), "--tmpdir", os.path.join(tmp, "tmp"),
              "--storage-driver", "overlay", "--runtime", "runc",
              "--cgroup-manager", "cgroupfs", "--events-backend", "file"]
    run = podman + ["run", "--network", "none"] + _ulimits()
    rootfs = ["--rootfs", sid.root.rstrip("/") + ":O"]   # then the command

    def pm(*args, timeout=120):
        return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)

    name = "pbp-podman-%d" % os.getpid()
    try:
        try:
            r = pm(*(run + ["--rm"] + rootfs + ["/usr/bin/python3.14", "-c", "print('ok')"]))
        except subprocess.TimeoutExpired:
            _unavailable("`podman run` timed out")
        if r.returncode != 0 or r.stdout.strip() != "ok":
            err = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            _unavailable("podman cannot run a container on this machine: %s\n  command: %s"
                         % (err, " ".join(run + ["--rm"] + rootfs)))

        r = pm(*(run + ["-d", "--name", name] + rootfs + ["/usr/bin/python3.14", "-c", TARGET]))
        assert r.returncode == 0, r.stderr
        cid = r.stdout.strip().splitlines()[-1]
        deadline = time.monotonic() + 30
        while True:
            r = pm(*(podman + ["inspect", name, "--format", "{{.State.Pid}} {{.State.Status}}"]))
            assert r.returncode == 0, r.stderr
            pid, status = r.stdout.split()
            if int(pid) > 0 and status == "running" and \
                    pm(*(podman + ["logs", name])).stdout.strip():
                break
            assert time.monotonic() < deadline, "container never started: %s" % r.stdout
            time.sleep(0.2)
        yield int(pid), cid
    finally:
        try:
            pm(*(podman + ["rm", "-f", "-t", "0", name]), timeout=60)
            pm(*(podman + ["rm", "-af", "-t", "0"]), timeout=60)
        except subprocess.TimeoutExpired:
            pass
        for mnt in sorted(_our_mounts(os.path.realpath(tmp)), reverse=True):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def test_target_is_in_a_container(container):
    pid, cid = container
    assert nspids(pid)[-1] == 1 and len(nspids(pid)) == 2
    with open("/proc/%d/cgroup" % pid) as f:
        assert cid in f.read()


def test_profile_by_host_pid(container, tmp_path):
    pid, _ = container
    out = tmp_path / "p.txt"
    r = pybpfprof("-p", pid, "-d", 2, "-o", out)
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    assert any(FUNC in map(func_of, frames) for frames, _ in stacks), out.read_text()


def test_profile_all_of_one_container(container, tmp_path):
    pid, cid = container
    out = tmp_path / "a.txt"
    r = pybpfprof("-a", "--container", cid[:12], "-d", 2, "-o", out)
    assert r.returncode == 0, r.stderr
    stacks = parse_collapsed(out.read_text())
    assert stacks, r.stderr
    roots = {frames[0] for frames, _ in stacks}
    assert all(re.match(r"process %d \(1 in its namespace\) " % pid, root) for root in roots), roots
    assert any(FUNC in map(func_of, frames) for frames, _ in stacks), out.read_text()
