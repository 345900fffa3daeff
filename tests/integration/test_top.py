"""`pybpfprof top`: the plain table (--once, stdout not a terminal) against a
target whose truth is known (tests/integration/targets/workers.py: a
spinner in work(), a sleeper in sleeper(), the main thread in main()); in
wall mode each of the three threads is a third of the samples."""

import re

from conftest import pybpfprof
from profile import WORKERS, parse_collapsed, total

TOLERANCE = 10.0    # percentage points
HEAD = re.compile(r"^samples (\d+) in ([\d.]+) s \(([\d.]+)/s\), lost (\d+); "
                  r"GIL held ([\d.]+)%, waited for ([\d.]+)%$")
THREAD = re.compile(r"^(\d+) (\S+)\s+(\d+)  ([A-Za-z?.]{20})  (.*)$")
FUNC = re.compile(r"^\s*([\d.]+)\s+([\d.]+)  (.+?)  (.+?)(?::(\d+))?$")


def parse_tables(text):
    """[{"head": match, "threads": {name: (tid, samples, bar, statuses)},
    "funcs": {name: (own, total, file, line)}}], one per table."""
    tables = []
    for line in text.splitlines():
        if line.startswith("pybpfprof top:"):
            tables.append({"title": line, "head": None, "threads": {}, "funcs": {}})
        elif not tables or not line.strip() or line.startswith(("THREAD", "  %OWN")):
            continue
        elif HEAD.match(line):
            tables[-1]["head"] = HEAD.match(line)
        elif THREAD.match(line):
            m = THREAD.match(line)
            tables[-1]["threads"][m.group(2)] = (int(m.group(1)), int(m.group(3)), m.group(4), m.group(5))
        elif FUNC.match(line):
            m = FUNC.match(line)
            tables[-1]["funcs"].setdefault(m.group(3), (float(m.group(1)), float(m.group(2)),
                                                        m.group(4), m.group(5)))
        else:
            raise AssertionError("unexpected line in top's table: %r\n%s" % (line, text))
    return tables


def start_two(start_target, interp):
    """(pid, {kind: tid}): a spinner and a sleeper, and the main thread."""
    _, pid, ready = start_target(interp, WORKERS, "spinner", "sleeper")
    tids = {t["kind"]: t["native_id"] for t in ready["threads"]}
    tids["main"] = ready["main_native_id"]
    return pid, tids


def check_table(t, tids, r):
    """A wall-mode table of the two-thread target: each thread a third."""
    why = "%s\nstderr: %s" % (r.stdout, r.stderr)
    assert t["head"], why
    samples = int(t["head"].group(1))
    assert samples >= 100, why
    for name, kind in (("spinner-0", "spinner"), ("sleeper-1", "sleeper"), ("MainThread", "main")):
        tid, n, bar, _ = t["threads"][name]
        assert tid == tids[kind], why
        assert abs(100.0 * n / samples - 100 / 3) <= TOLERANCE, why
    for func, thread in (("work", "spinner"), ("sleeper", "sleeper"), ("main", "main")):
        own, tot, path, line = t["funcs"][func]
        assert abs(own - 100 / 3) <= TOLERANCE, why
        assert path.endswith("workers.py") and line, why
    # The status bars: the spinner runs (or waits for a CPU or the GIL), the sleeper sleeps.
    assert t["threads"]["spinner-0"][2].count("S") == 0, why
    assert t["threads"]["sleeper-1"][2].count("S") >= 10, why
    assert t["threads"]["MainThread"][2] == "S" * 20, why


def test_once(interp, start_target):
    pid, tids = start_two(start_target, interp)
    r = pybpfprof("top", "--once", "-m", "wall", "-p", pid)
    assert r.returncode == 0, r.stderr
    tables = parse_tables(r.stdout)
    assert len(tables) == 1, r.stdout
    check_table(tables[0], tids, r)
    assert "last interval" in tables[0]["title"], r.stdout


def test_plain_periodic_and_whole_run_profile(interp, start_target, tmp_path):
    """stdout a pipe: a table per second; -o writes the whole run, not the last second."""
    pid, tids = start_two(start_target, interp)
    out = tmp_path / "whole.txt"
    r = pybpfprof("top", "-m", "wall", "-p", pid, "-d", "3.5", "-o", out)
    assert r.returncode == 0, r.stderr
    tables = parse_tables(r.stdout)
    assert len(tables) == 3, r.stdout
    for t in tables:
        check_table(t, tids, r)
    whole = total(parse_collapsed(out.read_text()))
    shown = sum(int(t["head"].group(1)) for t in tables)
    assert whole > shown, (whole, shown)        # the last half second is in the profile too
    assert whole <= 3.5 * 99 * 3 * 1.1


def test_cpu_mode_once(interp, start_target):
    """cpu mode: only the spinner is on a CPU; it holds the GIL."""
    pid, tids = start_two(start_target, interp)
    r = pybpfprof("top", "--once", "-p", pid)
    assert r.returncode == 0, r.stderr
    t = parse_tables(r.stdout)[0]
    assert float(t["head"].group(5)) >= 80.0, r.stdout
    assert t["funcs"]["work"][0] >= 90.0, r.stdout
    assert t["threads"]["spinner-0"][0] == tids["spinner"], r.stdout


def test_launched_command_ends_top():
    """-- cmd: top ends with the command, with its exit code."""
    code = "import time\nt = time.time()\nwhile time.time() - t < 2.5: pass\nraise SystemExit(3)\n"
    r = pybpfprof("top", "--", "python3", "-c", code, timeout=30)
    assert r.returncode == 3, r.stderr
    assert len(parse_tables(r.stdout)) >= 1, r.stdout


def test_usage_errors():
    for args in (["top"], ["top", "-p", "1", "-f", "svg"], ["top", "--interval", "0", "-p", "1"],
                 ["top", "-p", "1", "--", "true"]):
        r = pybpfprof(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") >= 1 and "pybpfprof top" in r.stderr, r.stderr
