"""Thread-local bytecode (free-threaded 3.14t): threads running one function
each run their own copy of its bytecode, and a frame's instruction pointer
points into its thread's copy. dump and a cpu profile must give each thread
the line of its own loop, which only the thread's copy maps right (read
through the code object's, it is no line of the function at all)."""

import json
import os

from conftest import pybpfprof
from profile import by_thread, parse_collapsed

SAMECODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets", "samecode.py")
INTERPRETERS = ["3.14t-sid-chroot"]
THREADS = 3     # one per loop of spin(); fewer than 2 CPUs' worth would still show it


def in_loop(t, line):
    first, last = t["lines"]
    return first <= line <= last


def test_each_thread_line_from_its_own_copy(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, SAMECODE, THREADS)
    for _ in range(5):
        r = pybpfprof("dump", "-p", pid, "--json")
        assert r.returncode == 0, r.stderr
        by_tid = {t["tid"]: t for t in json.loads(r.stdout)["threads"]}
        for t in ready["threads"]:
            top = by_tid[t["native_id"]]["frames"][0]
            assert (top["function"], top["file"]) == ("spin", ready["script"]), (t, top)
            assert in_loop(t, top["line"]), (t["name"], top, t["lines"])
    # The same through the kernel's samples: every one in the thread's own loop.
    out = tmp_path / "cpu.txt"
    r = pybpfprof("-p", pid, "-m", "cpu", "-F", 499, "-d", 2, "-t", "-o", out)
    assert r.returncode == 0, r.stderr
    threads = by_thread(parse_collapsed(out.read_text()))
    for t in ready["threads"]:
        stacks = threads.get(t["native_id"], [])
        assert sum(c for _, c in stacks) >= 50, (t["name"], r.stderr)
        for frames, _ in stacks:
            spin = [f for f in frames if f.startswith("spin (")]
            assert spin, (t["name"], frames)
            line = int(spin[-1].rsplit(":", 1)[1].rstrip(")"))
            assert in_loop(t, line), (t["name"], frames, t["lines"])
