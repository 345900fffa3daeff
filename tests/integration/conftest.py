"""Integration test harness: the interpreters to profile, and their targets.

Fixtures
  interp        parametrized over every interpreter we know of (see below);
                an unavailable one is skipped, or fails under PBP_REQUIRE_ALL=1
  start_target  start_target(interp, script, *args) -> (Popen, pid, ready_json)
  shared_target the same, started once per module for tests that only read it
  pybpfprof     pybpfprof(*args, timeout=60) -> CompletedProcess (text)

Interpreters
  pyenv         $(pyenv root)/versions/* for 3.6 and later ("3.6", "3.12", ...)
  debian        /usr/bin/python3.11, libpython linked in statically, stripped
                ("3.11-debian-static")
  sid chroot    /usr/bin/python3.14 in the chroot that scripts/sid-chroot.sh
                builds and caches ("3.14-sid-chroot"), run as
                `chroot DIR /usr/bin/python3.14`; /proc is mounted inside it
                for the session and unmounted at its end. The same chroot's
                sid 3.13.x ("3.13-sid-chroot", a later patch release than
                pyenv's 3.13.0) and Py_DEBUG builds python3.13d and
                python3.14d ("3.13-dbg-sid-chroot", "3.14-dbg-sid-chroot").
                These three differ from 3.13/3.14 only in layout and patch
                level, so they run the suites that read and check what a
                layout gives (EXTRA_SUITES: dump, sampling, modes, formats,
                names, versions, harness, -a), not the hostile, lifetime,
                namespace, CLI and output-file suites, whose code paths do
                not depend on the layout: minutes of `make test` each.
  3.14t         free-threaded 3.14 ("3.14t-sid-chroot") that
                scripts/build-freethreaded.sh builds into the same chroot:
                only looked for here (`make test` builds it first, once, and
                caches it: make freethreaded). Listed as SKIPPED with why when
                it is not built (the reason of the last attempt). Runs
                FREETHREADED_SUITES (EXTRA_SUITES and top) and the
                suites that name it (fourspin, tlbc).

Which were used and which skipped, and why, is printed in the terminal summary.
PBP_EXPECTED (comma-separated names) replaces the default list of interpreters
that must be there; PBP_REQUIRE_ALL=1 makes a missing one a failure.
PBP_INTERPS (comma-separated names) runs the interpreter-parametrized tests
on those only (a `one_version` test on the first of them that is there).
PBP_ONE_FAMILY=1 runs every test not marked `every_version` on one
interpreter, as `one_version` (make integration-asan).

Sanitized runs (`make integration-asan`)
  PBP_BIN             the binary to test instead of build/pybpfprof
  PBP_SANITIZED=1     tests whose checks mean nothing under ASan (resident
                      memory, valgrind) skip or relax them, saying why
  PBP_SANITIZER_LOGS  directory the sanitizers write their reports to
                      (log_path in ASAN_OPTIONS / UBSAN_OPTIONS): a report
                      that appears there during a test fails it, whatever
                      the test checked of the exit code and output
"""

import atexit
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

# How the tests run the binary under test (re-exported: tests import these
# from conftest), and the sanitizer check that is an autouse fixture here.
from binary import PYBPFPROF, SANITIZED, SANITIZER_LOGS, _no_sanitizer_report, pybpfprof, pybpfprof_fixture  # noqa: F401
from nulldev import null
# Which interpreters a test runs on (re-exported: tests import these from conftest).
from families import (ALL_FAMILIES, FAMILY_OF, FAMILY_REPS, ONLY, choose, thin,  # noqa: F401
                      unknown_names)
from passes import largest_first, serial_under_asan  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TARGETS = os.path.join(HERE, "targets")
TARGET_LIB = os.path.join(TARGETS, "pbp_target.py")
SID_CHROOT_SH = os.path.join(REPO, "scripts", "sid-chroot.sh")
FREETHREADED_SH = os.path.join(REPO, "scripts", "build-freethreaded.sh")

MIN_VERSION = (3, 6)
DEFAULT_EXPECTED = ["3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13",
                    "3.11-debian-static", "3.14-sid-chroot", "3.13-sid-chroot",
                    "3.13-dbg-sid-chroot", "3.14-dbg-sid-chroot", "3.14t-sid-chroot"]
# Interpreters of the sid chroot besides its python3.14: name -> path inside.
EXTRA_SUITES = {"test_dump", "test_asyncio", "test_record", "test_modes", "test_formats", "test_threadnames",
                "test_versions", "test_harness", "test_host"}
# The free-threaded 3.14t runs what reads its layout (EXTRA_SUITES), and
# what differs without a GIL: top's statuses. Suites that name it in
# INTERPRETERS (the four-thread split, per-thread bytecode) run on it too.
# Every other suite's code paths are the GIL builds'.
FREETHREADED_SUITES = EXTRA_SUITES | {"test_top"}
SID_EXTRA = [("3.13-sid-chroot", "/usr/bin/python3.13"),
             ("3.13-dbg-sid-chroot", "/usr/bin/python3.13d"),
             ("3.14-dbg-sid-chroot", "/usr/bin/python3.14d")]
REQUIRE_ALL = os.environ.get("PBP_REQUIRE_ALL", "") not in ("", "0")
READY_TIMEOUT = float(os.environ.get("PBP_READY_TIMEOUT", "60"))

PROBE = ("import sys, json, threading; "
         "print(json.dumps({'version': list(sys.version_info[:3]), "
         "'executable': sys.executable, 'impl': sys.implementation.name}))")


def _pdeathsig():
    """In the child before exec: die with SIGKILL when the test runner dies.
    The setting survives the exec of chroot and of python."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Interp(object):
    """One interpreter.

    name      "3.8", "3.11-debian-static", "3.14-sid-chroot", ...
    argv      prefix that runs a script: argv + [script, args...]
    version   (major, minor, micro)
    root      host path of the root the interpreter sees ("/" unless chrooted)
    executable          the interpreter's path as it sees it
    host_executable     the same file seen from the host
    kind      "pyenv", "debian" or "sid-chroot"
    """

    def __init__(self, name, kind, argv, root="/", executable=None):
        self.name = name
        self.kind = kind
        self.argv = list(argv)
        self.root = root
        self.executable = executable or (argv[-1] if argv else None)
        self.version = None
        self.skip_reason = None  # set when the interpreter cannot be used
        self.suites = None       # the suites it runs, when not all (a layout variant: EXTRA_SUITES)
        self.notes = ""

    def __repr__(self):
        return "Interp(%s)" % self.name

    @property
    def free_threaded(self):
        """A build without a GIL (3.14t): no GIL status, figures or gil mode."""
        return self.name.startswith("3.14t")

    @property
    def chrooted(self):
        return self.root != "/"

    @property
    def host_executable(self):
        return self.host_path(self.executable)

    def host_path(self, path):
        """A path as the interpreter sees it -> the same file from the host."""
        if not self.chrooted:
            return path
        return os.path.join(self.root, path.lstrip("/"))

    def interp_path(self, host_path):
        """A host path inside the interpreter's root -> its path as it sees it."""
        if not self.chrooted:
            return host_path
        rel = os.path.relpath(os.path.abspath(host_path), self.root)
        if rel.startswith(".."):
            raise ValueError("%s is outside %s" % (host_path, self.root))
        return "/" + rel

    def mkdtemp(self):
        """A fresh directory the interpreter can read and write:
        (host path, path as the interpreter sees it)."""
        if not self.chrooted:
            host = tempfile.mkdtemp(prefix="pbp-", dir=_session_tmp())
        else:
            base = os.path.join(self.root, "tmp", "pbp-tests", _SESSION_ID)
            os.makedirs(base, exist_ok=True)
            _cleanup_dirs.add(base)
            host = tempfile.mkdtemp(prefix="pbp-", dir=base)
        os.chmod(host, 0o777)
        return host, self.interp_path(host)

    def place(self, script):
        """Make a script file readable by the interpreter; returns its path as
        the interpreter sees it (a copy inside the chroot, else the file)."""
        script = os.path.abspath(script)
        if not self.chrooted:
            return script
        host, inside = self.mkdtemp()
        shutil.copy(script, host)
        shutil.copy(TARGET_LIB, host)   # what the targets import
        for c in glob.glob(os.path.join(os.path.dirname(script), "*.c")):
            shutil.copy(c, host)        # what they build (natfp.py: pbpfp.c)
        return os.path.join(inside, os.path.basename(script))

    def cmd(self, script_path, *args):
        """argv running a script given by its path as the interpreter sees it."""
        return self.argv + [script_path] + [str(a) for a in args]

    def run(self, *args, **kwargs):
        """Run the interpreter with arguments (e.g. "-c", code)."""
        kwargs.setdefault("timeout", 60)
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("universal_newlines", True)
        return subprocess.run(self.argv + list(args), **kwargs)


# --- session state ---------------------------------------------------------

_SESSION_ID = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
_cleanup_dirs = set()
_session_tmp_dir = []
_proc_mounts = []         # chroot /proc mounts this session made
_interps = None           # [Interp], all candidates, usable or not
_ignored = []             # (what, reason): not candidates at all (too old)
_used = {}                # name -> number of tests that ran with it
_live_targets = {}        # pid -> Popen, every target not yet reaped


def _session_tmp():
    if not _session_tmp_dir:
        _session_tmp_dir.append(tempfile.mkdtemp(prefix="pbp-tests-%s-" % _SESSION_ID))
        _cleanup_dirs.add(_session_tmp_dir[0])
    return _session_tmp_dir[0]


def _probe(interp):
    """Fill in interp.version, or interp.skip_reason when it does not run."""
    try:
        r = interp.run("-c", PROBE, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        interp.skip_reason = "does not run: %s" % e
        return
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        interp.skip_reason = "does not run: %s" % err
        return
    info = json.loads(r.stdout.strip().splitlines()[-1])
    interp.version = tuple(info["version"])
    interp.executable = info["executable"] or interp.executable
    if info["impl"] != "cpython":
        interp.skip_reason = "not CPython (%s)" % info["impl"]
    elif interp.version[:2] < MIN_VERSION:
        interp.skip_reason = "unsupported version %s" % ".".join(map(str, interp.version))


def _pyenv_root():
    root = os.environ.get("PYENV_ROOT")
    if not root and shutil.which("pyenv"):
        try:
            root = subprocess.run(["pyenv", "root"], capture_output=True,
                                  universal_newlines=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            root = None
    if not root and os.path.isdir("/root/.pyenv"):
        root = "/root/.pyenv"
    return root


def _discover_pyenv():
    found = []
    root = _pyenv_root()
    versions = os.path.join(root, "versions") if root else None
    if not versions or not os.path.isdir(versions):
        return found
    for entry in sorted(os.listdir(versions)):
        m = re.match(r"^(\d+)\.(\d+)(?:\.\d+)?(t?)$", entry)
        if not m:
            _ignored.append(("pyenv %s" % entry, "not a plain CPython version", entry))
            continue
        name = "%s.%s%s" % m.groups()
        if (int(m.group(1)), int(m.group(2))) < MIN_VERSION:
            _ignored.append(("pyenv %s" % entry, "unsupported (< 3.6)", name))
            continue
        if any(i.name == name for i in found):
            name = entry
        exe = os.path.join(versions, entry, "bin", "python3")
        interp = Interp(name, "pyenv", [exe])
        interp.notes = "pyenv %s" % entry
        if not os.path.exists(exe):
            interp.skip_reason = "%s missing" % exe
        found.append(interp)
    return found


def _discover_debian():
    exe = "/usr/bin/python3.11"
    interp = Interp("3.11-debian-static", "debian", [exe])
    if not os.path.exists(exe):
        interp.skip_reason = "%s not installed (apt-get install python3.11)" % exe
        return interp
    try:
        ldd = subprocess.run(["ldd", exe], capture_output=True,
                             universal_newlines=True, timeout=10).stdout
        stripped = b".symtab" not in open(exe, "rb").read()
        interp.notes = "libpython %s, %s" % (
            "shared" if "libpython" in ldd else "static",
            "stripped" if stripped else "not stripped")
    except (OSError, subprocess.SubprocessError):
        pass
    return interp


def _discover_sid_chroot():
    interp = Interp("3.14-sid-chroot", "sid-chroot", [], executable="/usr/bin/python3.14")
    if os.geteuid() != 0:
        interp.skip_reason = "needs root for chroot"
        return interp
    t0 = time.monotonic()
    try:
        r = subprocess.run(["bash", SID_CHROOT_SH], capture_output=True,
                           universal_newlines=True, timeout=3600)
    except (OSError, subprocess.SubprocessError) as e:
        interp.skip_reason = "scripts/sid-chroot.sh: %s" % e
        return interp
    if r.returncode != 0 or not r.stdout.strip():
        lines = r.stderr.strip().splitlines()
        why = [l for l in lines if "FAILED" in l] or lines[-1:] or ["exit %d" % r.returncode]
        interp.skip_reason = why[-1]
        return interp
    root = r.stdout.strip().splitlines()[-1]
    interp.root = root
    interp.argv = ["chroot", root, "/usr/bin/python3.14"]
    took = time.monotonic() - t0
    interp.notes = "chroot %s%s" % (root, " (built in %.0fs)" % took if took > 5 else "")
    try:
        with open(os.path.join(root, ".pbp-stamp")) as f:
            stamp = dict(l.split(": ", 1) for l in f.read().splitlines() if ": " in l)
        interp.notes += ", package %s, built %s" % (
            stamp.get("python3.14_package", "?"), stamp.get("built", "?"))
    except OSError:
        pass
    _mount_proc(interp)
    return interp


def _sid_extras(main):
    """The sid chroot's other interpreters, from the same chroot as main."""
    found = []
    for name, exe in SID_EXTRA:
        interp = Interp(name, "sid-chroot", [], executable=exe)
        interp.suites = EXTRA_SUITES
        if main.skip_reason:
            interp.skip_reason = main.skip_reason
        elif not os.path.exists(main.host_path(exe)):
            interp.skip_reason = ("%s not in the chroot (scripts/sid-chroot.sh --force "
                                  "installs it)" % exe)
        else:
            interp.root = main.root
            interp.argv = ["chroot", main.root, exe]
            interp.notes = "chroot %s" % main.root
        found.append(interp)
    return found


def _discover_freethreaded(main):
    """The free-threaded 3.14t that scripts/build-freethreaded.sh builds into
    the sid chroot. Only found here: `make test` builds it first (make
    freethreaded). It is reported as skipped, with why, when it is not there."""
    interp = Interp("3.14t-sid-chroot", "sid-chroot", [], executable="/opt/python3.14t/src/python")
    interp.suites = FREETHREADED_SUITES
    if main.skip_reason:
        interp.skip_reason = main.skip_reason
        return interp
    r = subprocess.run(["bash", FREETHREADED_SH, "--check"], capture_output=True,
                       universal_newlines=True, timeout=60,
                       env=dict(os.environ, PBP_CHROOT=main.root))
    if r.returncode != 0:
        try:
            with open(main.root.rstrip("/") + ".python3.14t.failed") as f:
                last = "last attempt: " + f.read().strip()
        except OSError:
            last = "never attempted"
        interp.skip_reason = ("no cached build (scripts/build-freethreaded.sh builds it; %s)"
                              % last)
        return interp
    interp.root = main.root
    interp.argv = ["chroot", main.root, interp.executable]
    interp.notes = "chroot %s" % main.root
    try:
        with open(main.host_path("/opt/python3.14t/.pbp-stamp")) as f:
            stamp = dict(l.split(": ", 1) for l in f.read().splitlines() if ": " in l)
        interp.notes += ", free-threaded, built %s in %s s (make %s s)" % (
            stamp.get("built", "?"), stamp.get("build_seconds", "?"), stamp.get("make_seconds", "?"))
    except OSError:
        pass
    return interp


def _sessions_dir(root):
    """Where sessions that mounted /proc inside the chroot sign in, by pid."""
    return os.path.realpath(root) + ".pbp-sessions"


def _other_live_session(root):
    """Whether another test session that mounted /proc in the chroot still
    runs (the sign-ins of dead ones are removed on the way)."""
    d = _sessions_dir(root)
    try:
        names = os.listdir(d)
    except OSError:
        return False
    live = False
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        if os.path.exists("/proc/%s" % name):
            live = True
        else:
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass
    return live


def _mount_proc(interp):
    """Mount /proc inside the chroot for this session. Mounts stack, so two
    sessions sharing the chroot each mount and unmount their own; each signs
    in, so that one never takes another's mount for a dead session's."""
    target = os.path.join(interp.root, "proc")
    _umount_stale(interp.root)
    r = subprocess.run(["mount", "-t", "proc", "proc", target],
                       capture_output=True, universal_newlines=True)
    if r.returncode != 0:
        interp.notes += ", /proc NOT mounted inside: %s" % r.stderr.strip()
        return
    _proc_mounts.append(target)
    try:
        os.makedirs(_sessions_dir(interp.root), exist_ok=True)
        open(os.path.join(_sessions_dir(interp.root), str(os.getpid())), "w").close()
    except OSError:
        pass


def _umount_stale(root):
    """Unmount /proc mounts left inside the chroot by sessions that were
    killed, provided no other session runs and no process runs in the
    chroot now."""
    target = os.path.join(root, "proc")
    real = os.path.realpath(root)
    if _other_live_session(root):
        return
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/root" % entry) == real:
                    return  # in use, maybe by another session: leave it be
            except OSError:
                pass
    for _ in range(100):
        if not os.path.ismount(target):
            return
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            return


def _umount_procs():
    while _proc_mounts:
        target = _proc_mounts.pop()
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)
        try:
            os.unlink(os.path.join(_sessions_dir(os.path.dirname(target)), str(os.getpid())))
        except OSError:
            pass


def _discover():
    global _interps
    if _interps is not None:
        return _interps
    sid = _discover_sid_chroot()
    found = (_discover_pyenv() + [_discover_debian(), sid] + _sid_extras(sid) +
             [_discover_freethreaded(sid)])
    for interp in found:
        if interp.skip_reason is None:
            _probe(interp)
    names = set(i.name for i in found)
    expected = [n.strip() for n in os.environ.get("PBP_EXPECTED", "").split(",") if n.strip()]
    for name in expected or DEFAULT_EXPECTED:
        if name not in names:
            missing = Interp(name, "missing", [])
            ignored = [why for what, why, n in _ignored if n == name]
            if ignored:
                missing.skip_reason = "expected but %s" % ignored[0]
            else:
                missing.skip_reason = "not found (expected: %s)" % (
                    "pyenv install %s" % name if re.match(r"^\d+\.\d+$", name)
                    else "see conftest.py")
            found.append(missing)
            names.add(name)
    _interps = sorted(found, key=lambda i: (i.version or (99,), i.name))
    return _interps


def _kill_target(proc):
    """SIGKILL the target's whole process group and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    _live_targets.pop(proc.pid, None)


def _cleanup():
    for proc in list(_live_targets.values()):
        _kill_target(proc)
    _umount_procs()
    for d in sorted(_cleanup_dirs, reverse=True):
        shutil.rmtree(d, ignore_errors=True)
    _cleanup_dirs.clear()


atexit.register(_cleanup)


# --- pytest hooks ------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line("markers", "every_version: the test reads what a layout gives "
                            "(dump exactness, thread names, stack decoding, per-version "
                            "offsets): it runs on every interpreter, not one of each family")
    config.addinivalue_line("markers", "families: the default, said explicitly: one "
                            "interpreter of each layout family (FAMILY_REPS)")
    config.addinivalue_line("markers", "one_version: the test reads no layout at all (the "
                            "CLI, files, exits, top's screen, a writer): it runs on one "
                            "interpreter (ONE_VERSION), not one of each family")
    config.addinivalue_line("markers", "serial: the test must not share the machine with "
                            "another test (system-wide profiling, the host's BPF objects, "
                            "processes or fds counted, CPU shares, rates, timing): make "
                            "integration runs it in its serial pass (-m serial), after the "
                            "parallel one (-n 2 -m 'not serial')")
    wrong = unknown_names([i.name for i in _discover()])
    if wrong:
        raise pytest.UsageError(wrong)


def pytest_report_header(config):
    interps = _discover()
    ok = [i.name for i in interps if not i.skip_reason]
    bad = [i.name for i in interps if i.skip_reason]
    return ["pybpfprof interpreters: %s%s" % (
        ", ".join(ok) or "NONE", "; UNAVAILABLE: %s" % ", ".join(bad) if bad else "")]


def pytest_generate_tests(metafunc):
    if "interp" in metafunc.fixturenames:
        interps = _discover()
        if ONLY:
            interps = [i for i in interps if i.name in ONLY]
        own = getattr(metafunc.module, "INTERPRETERS", None)
        interps = [i for i in interps if i.suites is None or metafunc.module.__name__ in i.suites
                   or (own is not None and i.name in own)]
        # Which of them: the suite's own, one of each layout family, every
        # one or one (families.py).
        interps = choose(metafunc, interps, ONLY)
        # A module may group its tests by interpreter (INTERP_SCOPE =
        # "module"): all of one interpreter's, then the next's, so that a
        # module-scoped fixture keeps one interpreter's target at a time.
        metafunc.parametrize("interp", interps, ids=[i.name for i in interps],
                             indirect=True, scope=getattr(metafunc.module, "INTERP_SCOPE", None))


# Last: after pytest's own reordering by fixture scope, which keeps modules whole.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    kept, dropped = thin(items, ONLY)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = largest_first(kept)


@pytest.fixture
def interp(request):
    it = request.param
    if it.skip_reason:
        msg = "interpreter %s unavailable: %s" % (it.name, it.skip_reason)
        if REQUIRE_ALL:
            pytest.fail(msg + " (PBP_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(msg)
    _used[it.name] = _used.get(it.name, 0) + 1
    return it


def pytest_sessionfinish(session, exitstatus):
    # An xdist worker hands its interpreters' test counts to the controller,
    # which prints the summary (pytest_testnodedown adds them up).
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["pbp_used"] = dict(_used)
    _cleanup()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for name, count in getattr(node, "workeroutput", {}).get("pbp_used", {}).items():
        _used[name] = _used.get(name, 0) + count


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _interps is None:
        return
    tr = terminalreporter
    tr.section("pybpfprof interpreters", sep="=", bold=True)
    for it in _interps:
        if it.skip_reason:
            continue
        tr.write_line("USED     %-20s %-8s %s tests; %s; %s" % (
            it.name, ".".join(map(str, it.version)), _used.get(it.name, 0),
            " ".join(it.argv), it.notes), green=True)
    for it in _interps:
        if it.skip_reason:
            tr.write_line("%s %-20s %s" % (
                "FAILED  " if REQUIRE_ALL else "SKIPPED ", it.name, it.skip_reason),
                red=True, bold=True)
    for what, why, _ in _ignored:
        tr.write_line("IGNORED  %-20s %s" % (what, why), yellow=True)
    missing = [it.name for it in _interps if it.skip_reason]
    if missing:
        tr.write_line("!!! %d interpreter(s) NOT TESTED: %s%s" % (
            len(missing), ", ".join(missing),
            "" if REQUIRE_ALL else "  (PBP_REQUIRE_ALL=1 makes this a failure)"),
            red=True, bold=True)


# --- targets -------------------------------------------------------------------

def pidns_argv(interp, levels):
    """Prefix that runs a command `levels` PID namespaces deep, each with its
    own mount namespace and /proc (inside the chroot for a chrooted one): a
    container without a runtime, as a profiler sees one."""
    proc_dir = os.path.join(interp.root, "proc") if interp.chrooted else "/proc"
    return ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc=" + proc_dir] * levels


def nspids(pid, tid=None):
    """The NSpid ids of a task (ours first, its own namespace's last)."""
    path = "/proc/%d/task/%d/status" % (pid, tid or pid)
    with open(path, errors="replace") as f:   # a thread's name is any bytes
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return []


def _descendants(root):
    kids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(entry))
    todo, out = [root], []
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _from_pidns(proc, ready, levels):
    """The target's host pid; ready's ids (its own namespace's) are made host
    ids in place, the originals kept as ready["ns"] = {host id: inner id}."""
    host = [p for p in _descendants(proc.pid)
            if len(nspids(p)) == levels + 1 and nspids(p)[-1] == ready["pid"]]
    if len(host) != 1:
        pytest.fail("no single process %s %d namespaces deep under %d: %s" % (
            ready["pid"], levels, proc.pid, host), pytrace=False)
    pid = host[0]
    inner = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        inner[nspids(pid, int(tid))[-1]] = int(tid)
    def translate(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if (k == "native_id" or k.endswith("_native_id")) and isinstance(v, int):
                    x[k] = inner.get(v, v)
                else:
                    translate(v)
        elif isinstance(x, list):
            for v in x:
                translate(v)
    translate(ready)
    ready["ns"] = {v: k for k, v in inner.items()}
    ready["ns_pid"], ready["pid"] = ready["pid"], pid
    return pid


def _task_alive(pid, tid):
    return os.path.exists("/proc/%d/task/%d" % (pid, tid))


class TargetStarter(object):
    """start_target(interp, script, *args) -> (Popen, pid, ready JSON).

    script: a host path, or a bare name under tests/integration/targets/.
    The ready file's path (as the interpreter sees it) is in $PBP_READY.
    Waits until the JSON is there and, when it names a "reporter" thread,
    until that thread is gone. The pid is the Python process's, as the host
    sees it (chroot execs the interpreter, so it is Popen.pid; checked
    against the JSON's "pid" when it has one). Every target is SIGKILLed
    and reaped at teardown."""

    def __init__(self):
        self.procs = []

    def __call__(self, interp, script, *args, **kwargs):
        timeout = kwargs.pop("timeout", READY_TIMEOUT)
        pidns = kwargs.pop("pidns", 0)
        env = dict(os.environ, **kwargs.pop("env", {}))
        if kwargs:
            raise TypeError("unexpected arguments %s" % sorted(kwargs))
        if not os.path.isabs(script) and not os.path.exists(script):
            script = os.path.join(TARGETS, script)
        inside = interp.place(script)
        host_dir, in_dir = interp.mkdtemp()
        ready_host = os.path.join(host_dir, "ready.json")
        env["PBP_READY"] = os.path.join(in_dir, "ready.json")
        env.pop("PYTHONHOME", None)
        env.pop("PYTHONPATH", None)
        out = open(os.path.join(host_dir, "stdout"), "w")
        err = open(os.path.join(host_dir, "stderr"), "w")
        try:
            proc = subprocess.Popen(pidns_argv(interp, pidns) + interp.cmd(inside, *args), env=env, stdout=out,
                                    stderr=err, stdin=null(),
                                    start_new_session=True, preexec_fn=_pdeathsig)
        finally:
            out.close()
            err.close()
        self.procs.append(proc)
        _live_targets[proc.pid] = proc

        def stderr_tail():
            with open(os.path.join(host_dir, "stderr")) as f:
                return f.read()[-2000:]

        deadline = time.monotonic() + timeout
        while not os.path.exists(ready_host):
            if proc.poll() is not None:
                pytest.fail("target %s on %s exited %s before it was ready:\n%s" % (
                    os.path.basename(script), interp.name, proc.returncode,
                    stderr_tail()), pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail("target %s on %s not ready after %gs:\n%s" % (
                    os.path.basename(script), interp.name, timeout, stderr_tail()),
                    pytrace=False)
            time.sleep(0.02)
        with open(ready_host) as f:
            ready = json.load(f)
        if "error" in ready:
            pytest.fail("target %s on %s failed: %s\n%s" % (
                os.path.basename(script), interp.name, ready["error"], stderr_tail()),
                pytrace=False)
        if pidns:
            return proc, _from_pidns(proc, ready, pidns), ready
        pid = proc.pid
        if "pid" in ready and ready["pid"] != pid:
            pytest.fail("target reports pid %s but Popen.pid is %s: the launcher "
                        "did not exec the interpreter" % (ready["pid"], pid),
                        pytrace=False)
        reporter = ready.get("reporter")
        if reporter:
            while _task_alive(pid, reporter["native_id"]):
                if time.monotonic() > deadline:
                    pytest.fail("reporter thread of %s did not exit" % script,
                                pytrace=False)
                time.sleep(0.01)
        return proc, pid, ready

    def stop_all(self):
        while self.procs:
            _kill_target(self.procs.pop())


@pytest.fixture
def start_target():
    starter = TargetStarter()
    try:
        yield starter
    finally:
        starter.stop_all()


# The module-scoped shared_target fixture and the hook that ends its targets
# (shared_target.py), here where pytest looks for fixtures and hooks.
from shared_target import pytest_runtest_teardown, shared_target  # noqa: E402,F401
