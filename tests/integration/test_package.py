"""The Debian package installed for real (docs/install.md).

`make deb` builds build/deb/pybpfprof_VERSION_ARCH.deb (dpkg-buildpackage,
then lintian; rebuilt only when a file it is made of changed). Each test
installs it with `apt-get install ./pybpfprof_*.deb` into a Debian chroot:
Debian 12 (scripts/bookworm-chroot.sh builds and caches it) and sid
(scripts/sid-chroot.sh's, which other tests use). The chroot is the lower
layer of an overlay mounted in a temporary directory, so whatever apt
writes goes to the upper layer and the cached tree stays as it was. From
inside, the test runs `pybpfprof --version`, `man -w pybpfprof`, a `dump`
and a 2 s recording of a Python started in that chroot, then purges the
package: no file of `dpkg -L` may be left that the chroot did not have,
and no file or directory named after the package anywhere.

apt's lists and downloaded archives for each chroot are kept in
/var/cache/pybpfprof/pkgtest-NAME/ (bind-mounted over the overlay's), so
that a second run needs no network; one run at a time per chroot (flock).
Skipped, saying why, when a chroot cannot be built or apt cannot reach the
mirror; the unit itself is checked by test_service.py."""

import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import REPO, SID_CHROOT_SH, _pdeathsig

BOOKWORM_SH = os.path.join(REPO, "scripts", "bookworm-chroot.sh")
CACHE = "/var/cache/pybpfprof"
NAME = "pybpfprof"
# The loop dump and the recording must find, in a file of the chroot's /tmp.
TARGET = r"""
import sys, time
def spin_in_chroot():
    end = time.process_time() + 600
    while time.process_time() < end:
        sum(range(1000))
print("ready", flush=True)
spin_in_chroot()
"""
CHROOTS = {
    # name: (script that builds it, the Python inside, the python it is)
    "bookworm": (BOOKWORM_SH, "/usr/bin/python3"),
    "sid": (SID_CHROOT_SH, "/usr/bin/python3.14"),
}


def version():
    with open(os.path.join(REPO, "user", "core", "version.h")) as f:
        return re.search(r'^#define PBP_VERSION "(.*)"$', f.read(), re.M).group(1)


def run(cmd, timeout=600, check=True):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, universal_newlines=True, timeout=timeout)
    if os.environ.get("PBP_PKG_TIMES"):
        print("%6.1fs %s" % (time.monotonic() - t0, " ".join(cmd)[-120:]))
    if check and r.returncode != 0:
        pytest.fail("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode,
                                          r.stdout[-3000:], r.stderr[-3000:]), pytrace=False)
    return r


@pytest.fixture(scope="module")
def deb():
    if os.geteuid() != 0:
        pytest.skip("needs root (chroot, mount)")
    for tool in ("dpkg-buildpackage", "dh", "lintian"):
        if not shutil.which(tool):
            pytest.skip("%s not installed (make deps installs it)" % tool)
    t0 = time.monotonic()
    r = run(["make", "-C", REPO, "deb"], timeout=3600, check=False)
    if r.returncode != 0:
        pytest.fail("make deb failed:\n%s%s" % (r.stdout[-3000:], r.stderr[-3000:]), pytrace=False)
    debs = glob.glob(os.path.join(REPO, "build", "deb", "%s_%s_*.deb" % (NAME, version())))
    assert len(debs) == 1, debs
    print("make deb: %.0f s" % (time.monotonic() - t0))
    return debs[0]


def chroot_dir(script):
    r = run(["bash", script], timeout=3600, check=False)
    if r.returncode != 0 or not r.stdout.strip():
        lines = r.stderr.strip().splitlines()
        why = [l for l in lines if "FAILED" in l] or lines[-1:] or ["exit %d" % r.returncode]
        pytest.skip(why[-1])
    return r.stdout.strip().splitlines()[-1]


class Overlay:
    """DIR as the lower layer of an overlay at MNT, with /proc and /sys
    mounted inside, the host's resolver copied in, and apt's lists and
    archives kept in CACHE/pkgtest-NAME."""

    def __init__(self, lower, name):
        self.lower = lower
        self.tmp = tempfile.mkdtemp(prefix="pbp-pkg-", dir="/var/tmp")
        self.upper = os.path.join(self.tmp, "upper")
        self.mnt = os.path.join(self.tmp, "root")
        self.cache = os.path.join(CACHE, "pkgtest-" + name)
        self.mounts = []

    def mount(self, *args, target):
        run(["mount"] + list(args) + [target])
        self.mounts.append(target)

    def __enter__(self):
        work = os.path.join(self.tmp, "work")
        for d in (self.upper, work, self.mnt):
            os.mkdir(d)
        self.lock = open(self.cache + ".lock", "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.mount("-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s"
                   % (self.lower, self.upper, work), target=self.mnt)
        self.mount("-t", "proc", "proc", target=self.path("/proc"))
        # BTF and the CPU list; a slave, so that unmounting it leaves the host's be.
        # One call: never a moment when an unmount below it would reach the host.
        self.mount("--rbind", "--make-rslave", "/sys", target=self.path("/sys"))
        for sub in ("lists", "archives"):
            os.makedirs(os.path.join(self.cache, sub, "partial"), exist_ok=True)
        # The first run starts from the lists the chroot was built with, if any.
        lists = os.path.join(self.lower, "var/lib/apt/lists")
        if not glob.glob(os.path.join(self.cache, "lists", "*_Packages*")):
            for f in glob.glob(os.path.join(lists, "*_*")):
                shutil.copy(f, os.path.join(self.cache, "lists"))
        self.mount("--bind", os.path.join(self.cache, "lists"),
                   target=self.path("/var/lib/apt/lists"))
        self.mount("--bind", os.path.join(self.cache, "archives"),
                   target=self.path("/var/cache/apt/archives"))
        shutil.copy("/etc/resolv.conf", self.path("/etc/resolv.conf"), follow_symlinks=True)
        return self

    def __exit__(self, *exc):
        for target in reversed(self.mounts):
            if subprocess.run(["umount", "-R", target], capture_output=True).returncode:
                subprocess.run(["umount", "-R", "-l", target], capture_output=True)
        self.lock.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, inside):
        return os.path.join(self.mnt, inside.lstrip("/"))

    def run(self, *cmd, **kwargs):
        return run(["chroot", self.mnt, "env", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"]
                   + list(cmd), **kwargs)


# The overlay is thrown away: dpkg need not sync every file it writes.
FAST = ["-o", "Dpkg::Options::=--force-unsafe-io"]


def apt_install(ov, *args):
    """apt-get install from the cached lists; when they are missing, stale or
    name archives the mirror no longer has, update them once and retry."""
    cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + FAST + list(args)
    if glob.glob(ov.path("/var/lib/apt/lists/*_Packages*")):
        if ov.run(*cmd, check=False).returncode == 0:
            return
    r = ov.run("apt-get", "update", check=False)
    if r.returncode != 0 or "Err:" in r.stdout:
        pytest.skip("apt-get update in the chroot cannot reach the mirror: %s"
                    % (r.stdout + r.stderr).strip().splitlines()[-1])
    ov.run(*cmd)


def named_after_package(root):
    found = []
    for d, dirs, files in os.walk(root):
        found += [os.path.join(d, n)[len(root):] for n in dirs + files if NAME in n]
    return sorted(found)


@pytest.mark.parametrize("which", sorted(CHROOTS))
def test_package_installs_runs_and_purges(deb, which):
    script, python = CHROOTS[which]
    lower = chroot_dir(script)
    with Overlay(lower, which) as ov:
        inside_deb = "/tmp/" + os.path.basename(deb)
        shutil.copy(deb, ov.path(inside_deb))
        # man-db for `man -w` (sid's chroot has none; its index, which
        # `man -w` does not need, is not built); the dependencies the package
        # declares come in with it, from the chroot's own mirror.
        ov.run("sh", "-c", "echo 'man-db man-db/auto-update boolean false' | debconf-set-selections")
        apt_install(ov, "." + inside_deb, "man-db")
        os.unlink(ov.path(inside_deb))
        files = ov.run("dpkg", "-L", NAME).stdout.split()
        for f in ("/usr/bin/pybpfprof", "/usr/share/man/man1/pybpfprof.1.gz",
                  "/usr/share/man/man1/pybpfprof-agent.1.gz", "/usr/share/man/man1/pybpfprof-top.1.gz",
                  "/usr/share/bash-completion/completions/pybpfprof",
                  "/lib/systemd/system/pybpfprof-agent.service",
                  "/etc/default/pybpfprof-agent", "/usr/share/doc/pybpfprof/copyright"):
            assert f in files, (f, files)

        assert ov.run("pybpfprof", "--version").stdout.strip() == "pybpfprof " + version()
        assert ov.run("man", "-w", NAME).stdout.strip() == "/usr/share/man/man1/pybpfprof.1.gz"

        with open(ov.path("/tmp/spin.py"), "w") as f:
            f.write(TARGET)
        target = subprocess.Popen(["chroot", ov.mnt, python, "/tmp/spin.py"],
                                  stdout=subprocess.PIPE, universal_newlines=True,
                                  preexec_fn=_pdeathsig)
        try:
            assert target.stdout.readline().strip() == "ready"
            pid = str(target.pid)
            dump = ov.run("pybpfprof", "dump", "-p", pid, timeout=60)
            assert "spin_in_chroot" in dump.stdout, dump.stdout
            rec = ov.run("pybpfprof", "-p", pid, "-d", "2", "-o", "/tmp/p.txt", timeout=60)
            with open(ov.path("/tmp/p.txt")) as f:
                stacks = f.read()
            assert "spin_in_chroot" in stacks, (rec.stderr, stacks[:2000])
        finally:
            target.kill()
            target.wait()

        ov.run("dpkg", "--purge", "--force-unsafe-io", NAME)
        assert ov.run("dpkg-query", "-W", NAME, check=False).returncode != 0
        left = [f for f in files
                if os.path.lexists(ov.path(f)) and not os.path.lexists(lower + f)]
        assert left == [], left
        # Enablement links, maintainer scripts' state: nothing named after it.
        assert named_after_package(ov.upper) == []
