"""Hostile conditions: targets that corrupt, stretch, churn, fork, exec,
stop and exit under the profiler; valgrind; kernel objects after every kind
of exit (privileges: test_privileges.py).

Every run of pybpfprof here must end within its timeout (a hang fails the
test), exit with the code the case documents, leave a profile that parses,
and stay under RSS_LIMIT (peak resident memory of the pybpfprof process,
from wait4)."""

import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from codecache import kernel_code_cache
from conftest import (ALL_FAMILIES, FAMILY_OF, PYBPFPROF, REPO, SANITIZED, TARGETS, _discover,
                      pybpfprof as pybpfprof_run, serial_under_asan)
from profile import (WORKERS, by_thread, func_of, marks, parse_collapsed, perf_events_open,
                     ready_side_path, total, wait_no_bpf_objects)
from nulldev import null

RSS_LIMIT_KB = 200 * 1024
VALGRIND_SUPP = os.path.join(REPO, "tests", "valgrind.supp")
EXIT_OK, EXIT_NO_PROCESS, EXIT_NOT_PYTHON, EXIT_UNSUPPORTED, EXIT_PERM = 0, 3, 4, 5, 6
EXIT_TARGET_GONE, EXIT_IO = 8, 10
NOBODY = 65534
CAP_SYS_PTRACE = 1 << 19
THREE_CAPS = "+bpf,+perfmon,+sys_ptrace"


# --- running pybpfprof --------------------------------------------------------

class Run(object):
    """A finished pybpfprof: returncode, stdout/stderr (bytes and text),
    maxrss_kb, seconds."""

    def __init__(self, returncode, out, err, maxrss_kb, seconds):
        self.returncode = returncode
        self.out, self.err = out, err
        self.stdout = out.decode("utf-8", "replace")
        self.stderr = err.decode("utf-8", "replace")
        self.maxrss_kb = maxrss_kb
        self.seconds = seconds

    def __repr__(self):
        return "exit %s after %.1fs, %d KiB\nstderr: %s" % (
            self.returncode, self.seconds, self.maxrss_kb, self.stderr[-3000:])


def start(args, prefix=(), env=None):
    """Popen of pybpfprof (behind prefix: valgrind, setpriv, sudo), output to files."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    p = subprocess.Popen(list(prefix) + [PYBPFPROF] + [str(a) for a in args], stdout=out,
                         stderr=err, stdin=null(), env=env)
    p.files, p.t0 = (out, err), time.monotonic()
    return p


def finish(p, timeout=60):
    """Wait for a start()ed pybpfprof; a run past its timeout is a hang: fail."""
    deadline = p.t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            out, err = p.files
            err.seek(0)
            pytest.fail("pybpfprof %s hung (no exit after %gs)\nstderr: %s" % (
                " ".join(p.args[-12:]), timeout, err.read()[-3000:].decode(errors="replace")),
                pytrace=False)
        time.sleep(0.01)
    p.returncode = os.waitstatus_to_exitcode(status)
    out, err = p.files
    out.seek(0)
    err.seek(0)
    return Run(p.returncode, out.read(), err.read(), ru.ru_maxrss, time.monotonic() - p.t0)


def run(args, timeout=60, **kwargs):
    return finish(start(args, **kwargs), timeout)


def check_rss(r):
    if SANITIZED:
        return  # ASan's shadow memory and quarantine of freed blocks: RSS says nothing then
    assert r.maxrss_kb < RSS_LIMIT_KB, "pybpfprof peaked at %d KiB" % r.maxrss_kb


def check_collapsed(path):
    """The profile parses: every line frames, a space, a positive count. Its stacks."""
    with open(str(path), "rb") as f:
        text = f.read().decode("utf-8")   # strict: the writers emit UTF-8
    stacks = parse_collapsed(text)
    for frames, count in stacks:
        assert count > 0 and all(frames), (frames, count)
    return stacks


def profile(pid, tmp_path, mode, seconds=2, extra=(), timeout=None, codes=(EXIT_OK,)):
    """pybpfprof -p PID -d seconds -m mode -t: (Run, stacks or None)."""
    out = tmp_path / ("%s-%d.txt" % (mode, int(time.monotonic() * 1000)))
    r = run(["-p", pid, "-d", seconds, "-m", mode, "-t", "-o", out] + list(extra),
            timeout=timeout or seconds + 30)
    assert r.returncode in codes, r
    check_rss(r)
    if r.returncode != EXIT_OK:
        assert not out.exists()
        return r, None
    return r, check_collapsed(out)


def profile_until(pid, tmp_path, mode, tids, need):
    """profile() again until each role in need has its samples (a loaded
    machine gives a spinner little CPU): (the last Run and by_thread, the
    samples each role got in all)."""
    got = dict.fromkeys(need, 0)
    for _ in range(8):
        r, stacks = profile(pid, tmp_path, mode)
        threads = by_thread(stacks)
        for role in got:
            got[role] += total(threads.get(tids[role], []))
        if all(got[role] >= n for role, n in need.items()):
            break
    return r, threads, got


def dump(pid, json_out=True, timeout=30, codes=(EXIT_OK,)):
    """pybpfprof dump: (Run, parsed JSON or text), checked to be UTF-8 (and JSON)."""
    r = run(["dump", "-p", pid] + (["--json"] if json_out else []), timeout=timeout)
    assert r.returncode in codes, r
    check_rss(r)
    if r.returncode != EXIT_OK:
        assert r.out == b""
        return r, None
    text = r.out.decode("utf-8")
    return r, json.loads(text) if json_out else text


def threads_of(d):
    return {t["tid"]: t for t in d["threads"]}


def role_tids(ready):
    return {t["role"]: t["native_id"] for t in ready["threads"]}


def first_interp():
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable, "no interpreter"
    return usable[0]


# --- (a) a frame chain turned into a cycle ---------------------------------------

def test_frame_cycle(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "cycle.py")
    tids = role_tids(ready)
    for json_out in (True, False):
        r, d = dump(pid, json_out)
        assert r.seconds < 10, r
    r, d = dump(pid)
    by = threads_of(d)
    for role in ("loop-parked", "loop-spinning"):
        t = by[tids[role]]
        assert t["error"] == "target memory is inconsistent", (role, t)
        funcs = [f["function"].rsplit(".", 1)[-1] for f in t["frames"]]
        assert "level3" in funcs and len(funcs) <= 64, (role, funcs)
    healthy = by[tids["healthy"]]
    assert healthy["error"] is None, healthy
    assert "healthy_spin" in [f["function"] for f in healthy["frames"]]
    for mode in ("cpu", "wall"):
        r, threads, got = profile_until(pid, tmp_path, mode, tids, {"healthy": 21, "loop-spinning": 6})
        assert any("healthy_spin" in map(func_of, fr) for fr, c in threads.get(tids["healthy"], []))
        # The spinning thread with the cycle is sampled, its stack cut where the loop is found.
        assert got["healthy"] > 20 and got["loop-spinning"] > 5, (mode, got, r)
    # wall: every thread every tick, the looped ones too (their ticks were
    # dropped when a walk read now met the loop: 0 of 197 for the parked
    # one), each frame of a loop once. A spinner caught mid-call under heavy
    # load may miss a tick or two, as a healthy thread may.
    ticks = total(threads[tids["healthy"]])
    for role, inner in (("loop-parked", "corrupt_park"), ("loop-spinning", "corrupt_spin")):
        mine = threads.get(tids[role], [])
        assert total(mine) >= 0.95 * ticks, (role, total(mine), ticks)
        cut = [[func_of(f).rsplit(".", 1)[-1] for f in fr] for fr, c in mine if inner in map(func_of, fr)]
        assert cut, (role, mine)
        for funcs in cut:
            looped = funcs[:funcs.index(inner)]
            assert sorted(set(looped)) == sorted(looped), (role, funcs)
    assert proc.poll() is None


DEEP_THREADS_END = """
import sys, threading, time
sys.setrecursionlimit(5000)
def rec(n):
    if n == 0:
        t = time.process_time()
        while time.process_time() - t < 0.002:
            pass
        return
    return rec(n - 1)
def worker():
    rec(350)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    ts = [threading.Thread(target=worker) for _ in range(3)]
    [t.start() for t in ts]
    [t.join() for t in ts]
"""


def test_outer_frames_unreadable_marked(interp, tmp_path):
    """Threads 350 frames deep that end within milliseconds: the kernel
    copies the inner frames, and by the time user space reads the rest the
    thread has ended and its frames are freed. Such a stack was kept as if
    its outermost frame read were the thread's first (a tenth of the samples,
    rootless, counted only in --stats=json's failed); it goes under a root
    frame of its own, as many as short_of_root says. Nor are another
    thread's frames, made where the ended thread's were, read on as its
    callers: a stack not under the mark is worker's 351 frames at most (3.6
    and 3.10 spliced 1.8-2.8 % of them; 1 in 3,300 is left, a thread that
    returned past the kernel's last frame and lives on)."""
    script = tmp_path / "deep_threads_end.py"
    script.write_text(DEEP_THREADS_END)
    out = tmp_path / "out.txt"
    r = pybpfprof_run("-F", 999, "--stats=json", "-o", out, "--",
                      *interp.cmd(interp.place(str(script)), 2))
    assert r.returncode == 0, r.stderr
    stats = json.loads(next(ln for ln in r.stderr.splitlines() if ln.startswith("{")))
    if not stats["failed"]:
        pytest.skip("no stack's walk met a freed frame in this run")
    marked = [(fr, c) for fr, c in parse_collapsed(out.read_text()) if "[outer frames unreadable]" in fr]
    assert sum(c for _, c in marked) == stats["short_of_root"] > 0, (stats, r.stderr[-2000:])
    # the marker is the root, the frames read under it
    assert all(fr.index("[outer frames unreadable]") == 0 and len(fr) > 1 for fr, _ in marked), marked[:3]
    whole = spliced = 0
    for fr, c in parse_collapsed(out.read_text()):
        recs = [i for i, f in enumerate(fr) if func_of(f) == "rec"]
        if not recs or "[outer frames unreadable]" in fr:
            continue
        whole += c
        # under worker, or under a frame whose code object had gone ([unknown]): not spliced
        if len(recs) > 351 or recs[0] == 0 or func_of(fr[recs[0] - 1]) not in ("worker", "[unknown]"):
            spliced += c
    assert spliced <= max(2, whole // 200), (spliced, whole, stats)


# --- (b) absurd code objects ----------------------------------------------------------

@pytest.mark.every_version
def test_absurd_code_objects(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "absurd.py", timeout=120)
    tids = role_tids(ready)
    r, d = dump(pid)
    by = threads_of(d)

    def top(role):
        return by[tids[role]]["frames"][0]

    assert top("long-body")["function"] == "long_body"
    assert top("long-body")["line"] in (50004, 50005), top("long-body")
    long_names = top("long-names")
    assert set(long_names["function"]) <= set("nC."), long_names["function"][:80]
    assert 100 < len(long_names["function"]) <= 16384
    assert long_names["file"].startswith("/fffff") and len(long_names["file"]) <= 16384
    odd = top("odd-chars")
    assert odd["function"] == "semi;colon\nnew line", odd   # cut at the NUL
    assert odd["file"] == "a;b\nc (1):2?.py", odd           # the lone surrogate is '?'
    for role in ("firstline-max", "firstline-min", "firstline-neg", "firstline-edge"):
        assert top(role)["function"] == "spin", top(role)
        assert isinstance(top(role)["line"], int)
    deep = by[tids["too-deep"]]
    # 20,000 frames deep is deep, not corrupt: the innermost and outermost frames are kept
    assert deep["error"] is None, deep["error"]
    assert deep["elided"]["count"] > 0 and len(deep["frames"]) == MAX_DEPTH, deep["elided"]
    assert deep["frames"][0]["function"] == "deep"
    assert deep["frames"][-1]["function"].endswith("_bootstrap"), deep["frames"][-1]
    r, text = dump(pid, json_out=False)
    assert "    semi;colon\\nnew line (a;b\\nc (1):2?.py" in text
    # cpu and wall at once, over the same seconds (as test_modes' record_modes)
    need = dict.fromkeys(("long-body", "long-names", "odd-chars", "firstline-max"), 1)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = {mode: pool.submit(profile_until, pid, tmp_path, mode, tids, need) for mode in ("cpu", "wall")}
        for mode, done in runs.items():
            r, threads, got = done.result()
            assert all(got.values()), (mode, got, r)
    # Every writer takes what was read: the names, the lines, the 20,000
    # frames. They read a collapsed file, which a layout family's versions
    # write alike: on the family's representative (CONTRIBUTING), unless
    # the interpreters are named (PBP_INTERPS) or all asked for.
    if interp.name in FAMILY_OF and not (ALL_FAMILIES or os.environ.get("PBP_INTERPS")):
        assert proc.poll() is None
        return
    src = tmp_path / "wall.txt"
    r = run(["-p", pid, "-d", 1, "-m", "wall", "-o", src], timeout=40)
    assert r.returncode == 0, r
    for ext in ("html", "svg", "speedscope.json", "pb.gz", "pstats"):
        r = run(["convert", "-i", src, "-o", tmp_path / ("out." + ext), "-m", "wall"], timeout=60)
        assert r.returncode == 0, (ext, r)
        check_rss(r)
    assert proc.poll() is None


# --- names that hold control characters ------------------------------------------------------

def escaped(s):
    """Text from the target as pybpfprof prints it: \\n \\t \\r, and \\xNN for the other
    C0 controls, DEL and C1."""
    short = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return "".join(short.get(c) or ("\\x%02x" % ord(c) if ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0
                                    else c) for c in s)


def raw_controls(data):
    """The control characters (C0 but the line end, DEL, C1) in UTF-8 bytes."""
    return [c for c in data.decode("utf-8")
            if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0)]


def test_control_characters_in_names(interp, start_target, tmp_path):
    """A thread name, a function name and a file name with ESC sequences, C1,
    BEL, DEL, tabs and newlines: no control character reaches the terminal or a
    file through dump (text and JSON), the summary, or the profile with -t, and
    no line is broken."""
    proc, pid, ready = start_target(interp, "hostile_names.py")
    tid = role_tids(ready)["hostile"]
    name, func, file = ready["threads"][1]["name"], ready["function"], ready["file"]
    r, d = dump(pid)
    assert raw_controls(r.out) == [], r.out
    t = threads_of(d)[tid]      # JSON keeps the names, escaped the JSON way
    assert t["name"] == name
    assert (t["frames"][0]["function"], t["frames"][0]["file"]) == (func, file)
    r, text = dump(pid, json_out=False)
    assert raw_controls(r.out) == [], r.out
    assert '\nThread %d "%s" (' % (tid, escaped(name)) in text
    assert "\n    %s (%s:3)\n" % (escaped(func), escaped(file)) in text
    out = tmp_path / "wall.txt"
    r = run(["-p", pid, "-d", 1, "-m", "wall", "-t", "-o", out], timeout=40)
    assert r.returncode == 0, r
    assert raw_controls(r.err) == [], r.err
    assert "\n  thread %-7d %s " % (tid, escaped(name)) in r.stderr    # the thread table
    assert "   %s (%s)\n" % (escaped(func), escaped(file)) in r.stderr  # the top functions
    assert raw_controls(out.read_bytes()) == []
    stacks = check_collapsed(out)
    assert len(stacks) == 2, stacks     # a line per thread: no name broke one
    (hostile,) = [f for f, c in stacks if f[0] == "thread %d %s" % (tid, escaped(name))]
    assert hostile[-1] == ("%s (%s:3)" % (escaped(func), escaped(file))).replace(";", ":")
    # convert reads it back as it is
    again = tmp_path / "again.txt"
    r = run(["convert", "-i", out, "-o", again])
    assert r.returncode == 0, r
    assert sorted(again.read_bytes().splitlines()) == sorted(out.read_bytes().splitlines())
    assert proc.poll() is None


# --- stacks deeper than the bound -------------------------------------------------------------

MAX_DEPTH = 16384       # Python frames a stack keeps


@pytest.mark.every_version
def test_deep_stacks(interp, start_target, tmp_path):
    """A stack deeper than the bound keeps its root and its leaf, and one marker
    frame says how many were left out between them: in dump (text and JSON)
    and in profiles, which convert reads back. A shallower one is whole."""
    proc, pid, ready = start_target(interp, "deep.py", "5000", "20000s", timeout=120)
    info = {t["role"]: t for t in ready["threads"]}
    tid5, tid20 = info["deep-5000"]["native_id"], info["deep-20000"]["native_id"]
    n5, n20 = info["deep-5000"]["frames"], info["deep-20000"]["frames"]
    cut = n20 - MAX_DEPTH
    r, d = dump(pid)
    by = threads_of(d)
    assert by[tid5]["error"] is None and by[tid5]["elided"] is None, by[tid5]["error"]
    assert len(by[tid5]["frames"]) == n5
    deep = by[tid20]
    assert deep["error"] is None, deep["error"]
    assert deep["elided"] == {"count": cut, "after": MAX_DEPTH // 2}
    funcs = [f["function"] for f in deep["frames"]]
    assert len(funcs) == MAX_DEPTH and funcs[0] == "park" and funcs[-1].endswith("_bootstrap")
    assert set(funcs[1:MAX_DEPTH // 2 + 2]) == {"descend"}
    r, text = dump(pid, json_out=False)
    assert "\n    [... %d frames elided]\n" % cut in text
    assert text.count("\n    descend (") == n5 - 4 + MAX_DEPTH - 4, "every frame kept is listed"
    for mode in ("cpu", "wall"):
        out = tmp_path / ("%s.txt" % mode)
        # 19 Hz: naming a 20,000-deep stack reads the whole chain, ~8 ms on 3.8-3.10,
        # and the loop must keep up on a busy machine (it does not return while it lags)
        r = run(["-p", pid, "-d", 2, "-F", 19, "-m", mode, "-t", "--status", "-o", out],
                timeout=90)
        assert r.returncode == 0, r
        assert "stacks read were deeper than %d frames" % MAX_DEPTH in r.stderr, r
        threads = by_thread(check_collapsed(out))
        assert threads.get(tid20), (mode, r)
        for frames, count in threads[tid20]:
            assert func_of(frames[0]).endswith("_bootstrap") and func_of(frames[-2]) == "park"
            assert frames[-1].startswith("["), frames[-1]     # the status
            marks = [f for f in frames if "elided" in f]
            assert marks == ["[... %d frames elided]" % cut], marks
            assert len(frames) == MAX_DEPTH + 2
        for frames, count in threads.get(tid5, []):
            assert len(frames) == n5 + 1 and func_of(frames[-2]) == "park"
        # convert takes every line pybpfprof writes, and gives the same lines back
        again = tmp_path / ("%s-again.txt" % mode)
        r = run(["convert", "-i", out, "-o", again])
        assert r.returncode == 0, r
        assert sorted(again.read_bytes().splitlines()) == sorted(out.read_bytes().splitlines())
    assert proc.poll() is None


# --- many threads, one stack ----------------------------------------------------------------

def test_collapsed_lines_are_distinct(interp, start_target, tmp_path):
    """300 threads parked on the same line: without -t their samples are one
    line, its count their sum; with -t a line per thread."""
    proc, pid, ready = start_target(interp, "named_threads.py", "many")
    for extra, least in (((), 1), (("-t",), 300)):
        out = tmp_path / ("many%s.txt" % "".join(extra))
        r = run(["-p", pid, "-d", 1, "-m", "wall", "-o", out] + list(extra), timeout=40)
        assert r.returncode == 0, r
        lines = [l.rpartition(" ")[0] for l in out.read_text().splitlines()]
        assert len(lines) == len(set(lines)) >= least, lines[:5]
    assert proc.poll() is None


# --- (c) churn ------------------------------------------------------------------------------

@pytest.mark.families
def test_churn(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "churn.py")
    for i in range(40):
        r, d = dump(pid)   # every one succeeds: a thread freed mid-walk is not an error
        assert d["pid"] == pid and d["threads"], r
    for mode in ("cpu", "wall"):
        r, stacks = profile(pid, tmp_path, mode)
        assert total(stacks) > 0, r
    assert proc.poll() is None


def swapped_samples(pid, tmp_path, a, b, least):
    """{function: samples} of codeswap.py's two functions under their own
    call lines, recorded again (4 times at most) until least samples of each
    (a loaded machine leaves the target little CPU). None is the other one
    (issue 35: with the name's address as the key 97 % were; with co_version
    alone 1 in 10,000-60,000 on 3.13, read while a copy was being made at
    the freed one's address, its name stored and not yet its co_version)."""
    m = marks(os.path.join(TARGETS, "codeswap.py"))
    want = {a: m["call-" + a[-1]], b: m["call-" + b[-1]]}
    seen, wrong = {a: 0, b: 0}, []
    for attempt in range(4):
        out = tmp_path / ("out%d.txt" % attempt)
        r = run(["-p", pid, "-F", 999, "-d", 2, "--stats=json", "-o", out])
        assert r.returncode == 0, r
        st = json.loads([l for l in r.stderr.splitlines() if l.startswith("{")][0])
        for frames, count in parse_collapsed(out.read_text()):
            for i, f in enumerate(frames):
                if func_of(f) in want and frames[i - 1].endswith(":%d)" % want[func_of(f)]):
                    seen[func_of(f)] += count
                elif func_of(f) in want:
                    wrong.append((frames[i - 1:i + 1], count))
        if min(seen.values()) >= least:
            break
    assert not wrong, wrong
    return seen, st


@pytest.mark.families
def test_code_freed_and_remade_at_one_address(interp, start_target, tmp_path):
    """Code objects freed and remade at the same address thousands of times a
    second, two functions in turn: each sample names the function its call
    line ran, never the one the address held before (3.14+ and a 3.13 of a
    known layout: the kernel's code-object cache, told stale by the
    interpreter's count of code objects freed, or made)."""
    proc, pid, ready = start_target(interp, "codeswap.py")
    seen, st = swapped_samples(pid, tmp_path, "swap_a", "swap_b", 100)
    assert min(seen.values()) >= 100, (seen, st)
    walk = st["kernel_walk"]
    if kernel_code_cache(interp):
        # Every code object made or freed turns the cache's count, so the
        # swapped functions are missed, and must be. Hits come only when two
        # samples fall between two turns (none in 1 run of 5 on 3.12): the
        # deep-stack test in test_record checks them on a steady stack.
        assert walk["code_misses"] > 0, walk
    else:
        # No cache across samples: every sample reads its code objects, each once a walk.
        assert walk["code_misses"] >= st["taken"], walk


@pytest.mark.families
def test_code_copies_named_at_one_address(interp, start_target, tmp_path):
    """Issue 35: copies of one code object (CodeType.replace) under names made
    anew, freed and remade at one address: the same first line, and the new
    name most often where the old one's was. Named by co_version (3.12+), a
    sample is the function its call line ran, or [unknown] once its object
    is gone; with co_name's address as the key most were the other one."""
    if interp.version < (3, 12):
        pytest.skip("no co_version before 3.12: told apart by first line and name address only "
                    "(docs/internals.md)")
    proc, pid, ready = start_target(interp, "codeswap.py", "replace")
    seen, st = swapped_samples(pid, tmp_path, "swap_c", "swap_d", 20)
    assert min(seen.values()) >= 20, (seen, st)


@pytest.mark.families
def test_dump_names_code_copies_at_one_address(interp, start_target):
    """dump reads stacks in user space: its walk kept each frame's code
    address only, and the object named later, after two walks agreed, was
    often another copy made at the freed one's address since (2 leaves in 75
    named after the other copy on 3.13, 11 with co_name's address as the
    key). The walk keeps each frame's key now: its own name, or none. dump
    reads a running thread without stopping it, so a caller's line may be
    read an instant after its callee's frame (docs/usage.md): 1 in 67 on a
    loaded 3.14, as a tick's; 1 in 50 is allowed, 3 % was wrong before."""
    if interp.version < (3, 12):
        pytest.skip("no co_version before 3.12 (docs/internals.md)")
    proc, pid, ready = start_target(interp, "codeswap.py", "replace")
    m = marks(os.path.join(TARGETS, "codeswap.py"))
    want = {"swap_c": m["call-c"], "swap_d": m["call-d"]}
    named, wrong = 0, []
    for _ in range(400):        # until 60 named: a loaded machine gives the target little CPU
        if named >= 60:
            break
        r, d = dump(pid)
        for t in d["threads"]:
            fr = t["frames"]
            for i, f in enumerate(fr[:-1]):
                if f["function"] in want:
                    named += 1
                    if fr[i + 1]["line"] != want[f["function"]]:
                        wrong.append((f, fr[i + 1]))
    assert len(wrong) <= max(1, named // 50), (len(wrong), named, wrong[:3])
    assert named >= 20, named


# --- a thread list that changes (or breaks) under the walk ----------------------------

def test_thread_list_ends_in_unmapped_memory(interp, start_target, tmp_path):
    """What a thread state freed mid-walk looks like, made permanent: the
    walk faults after the real threads. dump lists those, and succeeds."""
    proc, pid, ready = start_target(interp, "badlist.py", "fault")
    r, d = dump(pid)
    assert sorted(threads_of(d)) == sorted(ready["tids"]), d
    r, text = dump(pid, json_out=False)
    assert text.count("\nThread ") == 3, text
    r, stacks = profile(pid, tmp_path, "wall", seconds=1)
    assert set(by_thread(stacks)) <= set(ready["tids"])


def test_thread_list_cycle_is_corrupt(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "badlist.py", "cycle")
    r, d = dump(pid, codes=(9,))   # EXIT_CORRUPT
    assert r.stderr.strip().splitlines() == [
        "pybpfprof: pid %d: target memory is inconsistent" % pid], r
    assert r.seconds < 10, r
    for mode in ("cpu", "wall"):
        profile(pid, tmp_path, mode, seconds=1)   # no thread known: an empty profile, on time


# --- (d) fork and exec ------------------------------------------------------------------------

# Parallel: the exec waits for both profilers to sample (a recording across it came out
# empty beside load when it did not). Serial under ASan, untried there beside another test.
@pytest.mark.families
@serial_under_asan
def test_fork_and_exec(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "forker.py", "1.5")
    runs = [(mode, start(["-p", pid, "-d", 3, "-m", mode, "-t",
                          "-o", tmp_path / ("%s.txt" % mode)])) for mode in ("cpu", "wall")]
    # The exec comes 1.5 s after both sample (under load, starting took
    # longer than 1.5 s, and a wall profile once ended with no sample).
    deadline = time.monotonic() + 60
    while not all(perf_events_open(p.pid) for mode, p in runs):
        assert all(p.poll() is None for mode, p in runs) and time.monotonic() < deadline, runs
        time.sleep(0.05)
    open(ready_side_path(interp, ready, ".go"), "w").close()
    # Dumps before, across and after the exec: before and after it they see
    # Python; across it, whatever the half-replaced process shows, in time.
    codes = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.5:
        r, d = dump(pid, codes=(EXIT_OK, EXIT_NOT_PYTHON, EXIT_TARGET_GONE, 9))
        codes.append(r.returncode)
    assert codes.count(EXIT_OK) > len(codes) // 2, codes
    assert codes[-1] == EXIT_OK, codes
    r, d = dump(pid)
    assert any("spinner" in [f["function"] for f in t["frames"]] for t in d["threads"]), d
    for mode, p in runs:
        r = finish(p, timeout=40)
        assert r.returncode == 0, r
        check_rss(r)
        stacks = check_collapsed(tmp_path / ("%s.txt" % mode))
        assert total(stacks) > 0, (mode, r)
    assert proc.poll() is None


# --- (e) SIGSTOP -------------------------------------------------------------------------------

@pytest.mark.families
@pytest.mark.parametrize("mode", ["cpu", "wall"])
def test_sigstop_during_sampling(interp, start_target, tmp_path, mode):
    proc, pid, ready = start_target(interp, WORKERS, "spinner", "sleeper")
    out = tmp_path / "out.txt"
    try:
        p = start(["-p", pid, "-d", 2, "-m", mode, "-o", out])
        time.sleep(0.6)
        os.kill(pid, signal.SIGSTOP)
        r = finish(p, timeout=30)
        assert r.returncode == 0, r
        assert r.seconds < 15, r
        check_rss(r)
        check_collapsed(out)
        # Stopped all along: attach, read, sample nothing on CPU, end on time.
        r, stacks = profile(pid, tmp_path, mode, seconds=1)
        assert r.seconds < 15
        r, d = dump(pid)
        spin = [t for t in d["threads"] if t["tid"] == role_tids_kind(ready, "spinner")][0]
        assert "spinner" in [f["function"] for f in spin["frames"]], spin
        assert spin["on_cpu"] is False
    finally:
        os.kill(pid, signal.SIGCONT)
    assert proc.poll() is None


def role_tids_kind(ready, kind):
    return [t["native_id"] for t in ready["threads"] if t["kind"] == kind][0]


# --- (f) exit during a read ------------------------------------------------------------------

GONE = (EXIT_OK, EXIT_NO_PROCESS, EXIT_TARGET_GONE)


# The target ends 0.3 s after a dump has read it whole (it waits for the
# test's word), so a loaded machine delays the end rather than leaving no
# whole read: the parallel pass takes them.
@pytest.mark.families
@pytest.mark.parametrize("how", ["os_exit", "finalize"])
def test_exit_during_read(interp, start_target, tmp_path, how):
    exit_during_read(interp, start_target, tmp_path, how)


def test_abort_during_read(start_target, tmp_path):
    # From outside like os._exit: once is enough.
    exit_during_read(first_interp(), start_target, tmp_path, "abort")


def exit_during_read(interp, start_target, tmp_path, how):
    results, lock = [], threading.Lock()
    proc, pid, ready = start_target(interp, "exiter.py", how, "0.3")
    go = ready_side_path(interp, ready, ".go")
    p = start(["-p", pid, "-d", 3, "-m", "wall", "-o", tmp_path / "wall.txt"])
    deadline = time.monotonic() + 90

    def hammer():
        # Until the pid is gone for good, and a few reads after. The first
        # whole read tells the target to end: the others are reading then.
        after = 0
        while after < 3 and time.monotonic() < deadline:
            r = run(["dump", "-p", pid, "--json"], timeout=30)
            with lock:
                results.append(r)
                if r.returncode == EXIT_OK and not os.path.exists(go):
                    open(go, "w").close()
            if not os.path.exists("/proc/%d" % pid) or proc.poll() is not None:
                after += 1

    workers = [threading.Thread(target=hammer) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not any(w.is_alive() for w in workers), "dumps never ended"
    assert proc.poll() is not None, ("target never told to end: no dump read it whole",
                                     [r.returncode for r in results])
    for r in results:
        assert r.returncode in GONE, r
        check_rss(r)
        if r.returncode == EXIT_OK:
            json.loads(r.out.decode("utf-8"))
        else:
            assert len(r.stderr.strip().splitlines()) == 1, r
    assert any(r.returncode == EXIT_OK for r in results)
    r = finish(p, timeout=30)
    assert r.returncode in GONE, r
    check_rss(r)
    if r.returncode == EXIT_OK:
        check_collapsed(tmp_path / "wall.txt")


# --- sanitizers: valgrind ---------------------------------------------------------------------

VALGRIND = ["valgrind", "--suppressions=" + VALGRIND_SUPP, "--error-exitcode=99",
            "--leak-check=full", "--errors-for-leak-kinds=definite"]


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind not installed")
@pytest.mark.skipif(SANITIZED, reason="valgrind cannot run an ASan binary; ASan checks it instead")
@pytest.mark.parametrize("args", [["-d", "2"], ["-d", "2", "-m", "wall", "-t", "--status"],
                                  ["dump"]], ids=["cpu", "wall", "dump"])
def test_valgrind(shared_target, tmp_path, args):
    proc, pid, ready = shared_target(first_interp(), WORKERS, "spinner", "sleeper")
    out = tmp_path / "out.txt"
    if args == ["dump"]:
        cmd = ["dump", "-p", pid]
    else:
        cmd = ["-p", pid, "-o", out] + args
    r = run(cmd, prefix=VALGRIND, timeout=180)
    assert r.returncode == 0, r
    if args != ["dump"]:
        assert total(check_collapsed(out)) > 20


# --- kernel objects after every kind of exit ------------------------------------------------

def no_leftovers():
    left = wait_no_bpf_objects()
    assert not left, "BPF objects outlived pybpfprof: %s" % [
        (o["kind"], o.get("name"), o["id"]) for o in left]


def old_python():
    """A CPython older than 3.6 (pyenv's 2.7 or 3.5): not supported."""
    root = os.environ.get("PYENV_ROOT", "/root/.pyenv")
    for v in ("3.5", "2.7"):
        vers = os.path.join(root, "versions")
        if os.path.isdir(vers):
            for d in sorted(os.listdir(vers)):
                exe = os.path.join(vers, d, "bin", "python" + v)
                if d.startswith(v + ".") and os.path.exists(exe):
                    return exe
    return None


@pytest.mark.parametrize("extra", [[], ["--subprocesses"]])
def test_launched_old_python_named(tmp_path, extra):
    """A launched 2.7 is refused in one line naming its version, as -p's
    refusal does: not a bare "unsupported Python version"."""
    old = old_python()
    if not old:
        pytest.skip("no CPython older than 3.6")
    r = run(extra + ["-o", tmp_path / "o.txt", "--", old, "-c", "import time; time.sleep(3)"],
            timeout=60)
    lines = r.stderr.strip().splitlines()
    ver = os.path.basename(old)[len("python"):]
    assert r.returncode == EXIT_UNSUPPORTED, r.stderr
    assert len(lines) == 1 and ("unsupported Python version %s" % ver) in lines[0], r.stderr


@pytest.mark.parametrize("mode", ["cpu", "wall"])
@pytest.mark.serial
def test_kernel_objects_after_normal_exit(shared_target, tmp_path, mode):
    proc, pid, ready = shared_target(first_interp(), WORKERS, "spinner")
    r, stacks = profile(pid, tmp_path, mode, seconds=1)
    no_leftovers()


@pytest.mark.serial
def test_kernel_objects_after_error_exits(tmp_path):
    # After the sampler is loaded: a launched command that is not Python, one
    # that cannot run, one of an unsupported version; an unwritable output.
    py = first_interp().argv
    nap = ["-c", "import time; time.sleep(1.5)"]   # a launched command is waited for
    cases = [(["-o", tmp_path / "a.txt", "--", "sleep", "0.3"], EXIT_NOT_PYTHON),
             (["-o", tmp_path / "b.txt", "--", "/nonexistent/cmd"], EXIT_NOT_PYTHON),
             (["-o", tmp_path / "c.txt", "-d", "1", "--"] + py + nap, EXIT_OK)]
    old = old_python()
    if old:
        cases.append((["-o", tmp_path / "d.txt", "--", old] + nap, EXIT_UNSUPPORTED))
    # Before it: no such pid, bad usage.
    cases += [(["-p", "4194301", "-d", "1"], EXIT_NO_PROCESS), (["-F", "0", "-p", "1"], 2)]
    for args, code in cases:
        r = run(args, timeout=60)
        assert r.returncode == code, (args, r)
        no_leftovers()
    r = run(["-o", "/nonexistent/dir/out.txt", "-d", "1", "--"] + py + nap, timeout=60)
    assert r.returncode == EXIT_IO, r
    no_leftovers()


@pytest.mark.parametrize("when", [0.05, 0.2, 1.5], ids=["setup", "early", "sampling"])
@pytest.mark.serial
def test_kernel_objects_after_sigkill(shared_target, tmp_path, when):
    # pybpfprof is killed, not the target: one target serves the three.
    proc, pid, ready = shared_target(first_interp(), WORKERS, "spinner")
    p = start(["-p", pid, "-m", "wall", "-o", tmp_path / "out.txt"])
    time.sleep(when)
    p.kill()
    finish(p, timeout=30)
    no_leftovers()
    assert not [f for f in os.listdir(str(tmp_path)) if f.startswith("out.txt")]
