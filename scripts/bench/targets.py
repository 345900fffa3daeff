"""The measured side: the target script, the interpreters that run it, and
starting and stopping targets."""

import ctypes
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from common import CHROOT, PYENV


# The target side: one script, several behaviours. Python 3.8+.
TARGET_PY = r'''
import json, os, sys, threading, time

LEAF = 200


def leaf():
    x = 0
    for i in range(LEAF):
        x += i * i
    return x


def rec(n):
    if n <= 0:
        return leaf()
    return rec(n - 1) + 1


def work_main(depth, iters):
    s = 0
    for _ in range(iters):
        s += rec(depth)
    return s


ZDATA = bytes(range(256)) * 256 + os.urandom(64 << 10)


def zlib_main(depth, iters):
    """depth frames down, then iters compressions of 128 KiB: in libz without
    the GIL nearly all the time, under a Python stack of that depth."""
    if depth > 0:
        return zlib_main(depth - 1, iters)
    import zlib
    for _ in range(iters):
        zlib.compress(ZDATA, 6)


def spin_main(depth):
    while True:
        rec(depth)


def hold(n):
    """Recurse n deep, then stay there: every sample sees the whole depth."""
    if n <= 0:
        while True:
            leaf()
    return hold(n - 1) + 1


def hold_distinct(n):
    """As hold, through n functions of their own (f0 calls f1 ... calls leaf
    forever): a stack of distinct code objects, none met twice."""
    src = "".join("def f%d():\n    return f%d() + 1\n" % (i, i + 1) for i in range(n))
    src += "def f%d():\n    while True:\n        leaf()\n" % n
    names = {"leaf": leaf}
    exec(compile(src, "<distinct>", "exec"), names)
    return names["f0"]()


def wake_main(depth):
    """depth frames down, sleeps 10 ms and 30 ms by turns: 50 wakeups a second."""
    if depth > 1:
        return wake_main(depth - 1)
    while True:
        time.sleep(0.01)
        leaf()
        time.sleep(0.03)
        leaf()


def idle_wait(ev):
    ev.wait()


def schedstat():
    """(ns on CPU, ns waiting for a CPU) of this thread."""
    with open("/proc/self/task/%d/schedstat" % threading.get_native_id()) as f:
        v = f.read().split()
    return int(v[0]), int(v[1])


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.rename(path + ".tmp", path)


def ready(path, **kw):
    # get_native_id is 3.8+: the agent scenario runs 3.6 and 3.7 too
    kw.update(pid=os.getpid(), native_id=getattr(threading, "get_native_id", lambda: None)(),
              version=sys.version.split()[0])
    write_json(path, kw)


def main():
    sys.setrecursionlimit(10000)
    if os.environ.get("PBP_BENCH_COMM"):    # so that -a --comm can pick the bench's processes
        import ctypes
        ctypes.CDLL(None).prctl(15, os.environ["PBP_BENCH_COMM"].encode(), 0, 0, 0)  # PR_SET_NAME
    what = sys.argv[1]
    if what in ("timed", "timedz"):         # timed[z] DEPTH ITERS RESULT GUARD_S CHUNKS
        depth, iters, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        guard, nchunks = float(sys.argv[5]), int(sys.argv[6])
        work = work_main if what == "timed" else zlib_main
        per, done, chunks = max(1, iters // nchunks), 0, []
        time.sleep(guard)
        c0, t0 = schedstat(), time.perf_counter()
        while done < iters:                 # the same work, timed in chunks
            n = min(per, iters - done)
            s0, w0 = schedstat(), time.perf_counter()
            work(depth, n)
            w1, s1 = time.perf_counter(), schedstat()
            chunks.append((w1 - w0) - (s1[1] - s0[1]) / 1e9)
            done += n
        t1, c1 = time.perf_counter(), schedstat()
        write_json(out, {"wall": t1 - t0, "cpu": (c1[0] - c0[0]) / 1e9,
                         "delay": (c1[1] - c0[1]) / 1e9, "chunks": chunks,
                         "version": sys.version.split()[0]})
    elif what == "spin":                    # spin DEPTH READY
        ready(sys.argv[3])
        spin_main(int(sys.argv[2]))
    elif what == "hold":                    # hold DEPTH READY
        ready(sys.argv[3])
        hold(int(sys.argv[2]))
    elif what == "distinct":                # distinct DEPTH READY
        ready(sys.argv[3])
        hold_distinct(int(sys.argv[2]))
    elif what == "zlib":                    # zlib READY: in libz without the GIL
        import zlib
        data = bytes(range(256)) * 4096 + os.urandom(1 << 20)
        ready(sys.argv[2])
        while True:
            zlib.compress(data, 6)
    elif what == "syscalls":                # syscalls READY: in the kernel nearly always
        import tempfile
        d = tempfile.mkdtemp(prefix="pbp-bench-")
        path = os.path.join(d, "data")
        with open(path, "wb") as f:
            f.write(os.urandom(8 << 20))
        f = open(path, "rb", buffering=0)
        os.unlink(path)                     # killed, it leaves nothing behind
        os.rmdir(d)
        buf = bytearray(1 << 20)
        ready(sys.argv[2])
        while True:
            f.seek(0)
            while f.readinto(buf):
                pass
            os.urandom(1 << 16)
    elif what == "idle":                    # idle READY
        ready(sys.argv[2])
        while True:
            time.sleep(3600)
    elif what == "idle3":                   # idle3 READY: three threads asleep
        for _ in range(2):
            threading.Thread(target=time.sleep, args=(1e6,), daemon=True).start()
        ready(sys.argv[2])
        time.sleep(1e6)
    elif what == "churn":                   # churn DEPTH READY: a short thread started 10 times a second
        depth = int(sys.argv[2])
        ready(sys.argv[3])
        while True:
            t = threading.Thread(target=rec, args=(depth,))
            t.start()
            t.join()
            time.sleep(0.1)
    elif what == "sleeploop":               # sleeploop READY
        ready(sys.argv[2])
        while True:
            time.sleep(0.1)
    elif what == "wakers":                  # wakers N DEPTH READY
        n, depth = int(sys.argv[2]), int(sys.argv[3])
        for _ in range(n):
            threading.Thread(target=wake_main, args=(depth,), daemon=True).start()
        ready(sys.argv[4], threads=threading.active_count())
        while True:
            time.sleep(3600)
    elif what == "pool":                    # pool N DEPTH SECONDS READY: N fork workers
        n, depth, secs = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        end, workers = time.monotonic() + secs, []
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                while time.monotonic() < end:
                    rec(depth)
                os._exit(0)
            workers.append(pid)
        ready(sys.argv[5], workers=workers)
        for pid in workers:
            os.waitpid(pid, 0)
    elif what == "threads":                 # threads N DEPTH READY
        n, depth = int(sys.argv[2]), int(sys.argv[3])
        ev = threading.Event()
        for _ in range(n):
            threading.Thread(target=idle_wait, args=(ev,), daemon=True).start()
        ready(sys.argv[4], threads=threading.active_count())
        spin_main(depth)


main()
'''


def pdeathsig():
    """In a child before exec: die with SIGKILL if the bench dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass


# ---------------------------------------------------------------- interpreters

class Interp(object):
    """name "3.11"; argv runs a script; root is "/" or the chroot."""

    def __init__(self, name, argv, root="/"):
        self.name, self.argv, self.root = name, list(argv), root
        self.version = None
        self.host_dir = self.dir = None
        self.chroot_py = None

    def setup(self, tag):
        if self.root == "/":
            self.host_dir = tempfile.mkdtemp(prefix="pbp-bench-%s-" % tag)
        else:
            base = os.path.join(self.root, "tmp")
            self.host_dir = tempfile.mkdtemp(prefix="pbp-bench-%s-" % tag, dir=base)
        os.chmod(self.host_dir, 0o777)
        self.dir = "/" + os.path.relpath(self.host_dir, self.root) if self.root != "/" else self.host_dir
        with open(os.path.join(self.host_dir, "target.py"), "w") as f:
            f.write(TARGET_PY)
        self.script = os.path.join(self.dir, "target.py")
        self.seq = 0

    def files(self, stem):
        """(host path, path as the interpreter sees it) of a fresh file name."""
        self.seq += 1
        name = "%s-%d.json" % (stem, self.seq)
        return os.path.join(self.host_dir, name), os.path.join(self.dir, name)

    def cmd(self, *args):
        return self.argv + [self.script] + [str(a) for a in args]

    def cleanup(self):
        if self.host_dir:
            shutil.rmtree(self.host_dir, ignore_errors=True)


def pyenv_exe(minor):
    cands = sorted(glob.glob(os.path.join(PYENV, "versions", "3.%d.*" % minor, "bin", "python3")))
    cands = [c for c in cands if re.search(r"/3\.%d\.\d+/bin/" % minor, c)]
    return cands[-1] if cands else None


# Interpreters inside the chroot: its python3.14, and the free-threaded 3.14t
# scripts/build-freethreaded.sh builds into it.
CHROOT_PYS = {"3.14": "/usr/bin/python3.14", "3.14t": "/opt/python3.14t/src/python"}


def chroot_argv(py="/usr/bin/python3.14"):
    """argv prefix running the chroot's interpreter py with a /proc of its own:
    mounted in a private mount namespace, so it is nobody else's to unmount
    and goes away with the process. unshare, sh and chroot all exec, so the
    interpreter keeps the pid the bench started."""
    if os.geteuid() != 0 or not os.path.exists(CHROOT + py) or not os.path.exists(os.path.join(CHROOT, ".pbp-stamp")):
        return None
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t proc proc "$0/proc" && exec chroot "$0" %s "$@"' % py, CHROOT]


def discover(wanted):
    out, missing = [], []
    for name in wanted:
        if name.startswith("3.14"):
            py = CHROOT_PYS["3.14t" if name.startswith("3.14t") else "3.14"]
            argv = chroot_argv(py)
            if argv:
                out.append(Interp(name.split("-")[0] + "-chroot", argv, CHROOT))
                out[-1].chroot_py = py
            else:
                missing.append((name, "no usable chroot at %s (make chroot)" % CHROOT))
            continue
        m = re.match(r"^3\.(\d+)$", name)
        exe = pyenv_exe(int(m.group(1))) if m else None
        if exe:
            out.append(Interp(name, [exe]))
        else:
            missing.append((name, "no pyenv %s under %s" % (name, PYENV)))
    for it in out:
        r = subprocess.run(it.argv + ["-c", "import sys; print(sys.version.split()[0])"],
                           capture_output=True, text=True, timeout=60)
        it.version = r.stdout.strip() if r.returncode == 0 else None
    bad = [i for i in out if not i.version]
    for i in bad:
        missing.append((i.name, "does not run"))
    return [i for i in out if i.version], missing


# ---------------------------------------------------------------- processes

_live = {}


def spawn(it, *args, ready_stem="ready", timeout=60, env=None):
    """Start a long-lived target; returns (Popen, ready JSON)."""
    host, inside = it.files(ready_stem)
    proc = subprocess.Popen(it.cmd(*(list(args) + [inside])), stdin=subprocess.DEVNULL,
                            env=dict(os.environ, **(env or {})),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=pdeathsig)
    _live[proc.pid] = proc
    deadline = time.monotonic() + timeout
    while not os.path.exists(host):
        if proc.poll() is not None or time.monotonic() > deadline:
            kill(proc)
            raise RuntimeError("target %s %s did not start" % (it.name, " ".join(map(str, args))))
        time.sleep(0.01)
    with open(host) as f:
        return proc, json.load(f)


def kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    _live.pop(proc.pid, None)


def kill_all():
    for p in list(_live.values()):
        kill(p)
