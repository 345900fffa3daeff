"""`pybpfprof top`: the plain table (--once, stdout not a terminal) against a
target whose truth is known (tests/integration/targets/workers.py: a
spinner in work(), a sleeper in sleeper(), the main thread in main()); in
wall mode each of the three threads is a third of the samples."""

import os
import re
import subprocess
import time
import uuid

import pytest

from conftest import PYBPFPROF, REPO, pybpfprof
from profile import WORKERS, parse_collapsed, total

TOLERANCE = 10.0    # percentage points
HEAD = re.compile(r"^samples (\d+) in ([\d.]+) s \(([\d.]+)/s\), lost (\d+); "
                  r"(?:GIL held ([\d.]+)%, waited for ([\d.]+)%|no GIL: free-threaded)$")
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


# The tests that only read the two-thread target share one per interpreter
# (shared_target), one interpreter's tests after the other's.
INTERP_SCOPE = "module"


def start_two(shared_target, interp):
    """(pid, {kind: tid}): a spinner and a sleeper, and the main thread."""
    _, pid, ready = shared_target(interp, WORKERS, "spinner", "sleeper")
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
    # The status bars: the spinner runs (or waits for a CPU or the GIL); the sleeper
    # sleeps, and waits for the GIL the spinner holds each time it wakes (a third
    # of the time and more on a busy host).
    assert t["threads"]["spinner-0"][2].count("S") == 0, why
    assert t["threads"]["sleeper-1"][2].count("S") >= 4, why
    assert t["threads"]["sleeper-1"][2].count("R") <= 4, why
    assert t["threads"]["MainThread"][2] == "S" * 20, why


def test_once(interp, shared_target):
    pid, tids = start_two(shared_target, interp)
    r = pybpfprof("top", "--once", "-m", "wall", "-p", pid)
    assert r.returncode == 0, r.stderr
    tables = parse_tables(r.stdout)
    assert len(tables) == 1, r.stdout
    check_table(tables[0], tids, r)
    assert "last interval" in tables[0]["title"], r.stdout


def test_plain_periodic_and_whole_run_profile(interp, shared_target, tmp_path):
    """stdout a pipe: a table per second; -o writes the whole run, not the last second."""
    pid, tids = start_two(shared_target, interp)
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


def test_cpu_mode_once(interp, shared_target):
    """cpu mode: the spinner is on a CPU, holding the GIL; the sleeper for moments only.
    (Samples are CPU time: on a busy host the spinner may get little of it,
    but what the target gets is still the spinner's: the parallel pass.)"""
    pid, tids = start_two(shared_target, interp)
    r = pybpfprof("top", "--once", "--interval", "2", "-p", pid)
    assert r.returncode == 0, r.stderr
    t = parse_tables(r.stdout)[0]
    if interp.free_threaded:    # no GIL figures (they read "GIL held 100.0%")
        assert t["head"].group(5) is None and "no GIL: free-threaded" in r.stdout, r.stdout
    else:
        assert float(t["head"].group(5)) >= 100 - TOLERANCE - 10, r.stdout
    assert t["funcs"]["work"][0] >= 100 - TOLERANCE - 10, r.stdout
    assert t["threads"]["spinner-0"][0] == tids["spinner"], r.stdout


def test_launched_command_ends_top():
    """-- cmd: top ends with the command, with its exit code."""
    code = "import time\nt = time.time()\nwhile time.time() - t < 2.5: pass\nraise SystemExit(3)\n"
    r = pybpfprof("top", "--", "python3", "-c", code, timeout=30)
    assert r.returncode == 3, r.stderr
    assert len(parse_tables(r.stdout)) >= 1, r.stdout


def test_once_command_that_cannot_run():
    """The command's one error line, and no empty table beside it on stdout."""
    r = pybpfprof("top", "--once", "--", "/nonexistent/cmd", timeout=30)
    assert r.returncode == 4, r.stderr
    assert r.stdout == "", r.stdout
    assert r.stderr.splitlines() == ["pybpfprof: cannot run '/nonexistent/cmd': No such file or directory"]


def test_help_names_every_format():
    """top -o takes every format a recording does; --help names them all, and says gecko keeps no times."""
    with open(os.path.join(REPO, "scripts", "pybpfprof.bash-completion")) as f:
        formats = re.search(r'_pybpfprof_formats="([^"]+)"', f.read()).group(1).split()
    text = " ".join(pybpfprof("top", "--help").stdout.split())
    listed = re.search(r"The -o file's format: (.+?) \(default", text).group(1)
    assert set(re.findall(r"\b(%s)\b" % "|".join(formats), listed)) == set(formats), listed
    assert "gecko (without sample times" in listed, listed


def test_usage_errors():
    for args in (["top"], ["top", "-p", "1", "-f", "svg"], ["top", "--interval", "0", "-p", "1"],
                 ["top", "-p", "1", "--", "true"]):
        r = pybpfprof(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") >= 1 and "pybpfprof top" in r.stderr, r.stderr


# --- the full screen, under tmux ---------------------------------------------------

class Tmux(object):
    """A private tmux server with one 80x24 pane running a shell command;
    the command's exit code and the terminal's modes after it are printed
    in the pane when it ends."""

    def __init__(self, tmp_path, command, env="", width=80):
        self.sock = "pbp-top-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        self.done = str(tmp_path / ("%s.done" % self.sock))
        script = tmp_path / ("%s.sh" % self.sock)
        # The shell outlives a Ctrl-C meant for top (a trap, unlike an ignore, is not inherited).
        script.write_text("trap : INT\n%s %s\necho EXIT=$? > %s.tmp\nstty -a | tr ' ;' '\\n\\n' | grep -Ex -- '-?(icanon|echo)' "
                          ">> %s.tmp\nmv %s.tmp %s\nsleep 60\n"
                          % (env, command, self.done, self.done, self.done, self.done))
        self.tmux("new-session", "-d", "-s", "top", "-x", str(width), "-y", "24", "sh %s" % script)

    def tmux(self, *args):
        r = subprocess.run(["tmux", "-L", self.sock] + list(args), capture_output=True,
                           universal_newlines=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def screen(self, escapes=False):
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "top")

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def wait_for(self, pred, timeout=15.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = self.screen()
            if pred(text):
                return text
            time.sleep(0.1)
        raise AssertionError("the screen never showed what was expected:\n" + self.screen())

    def ended(self, timeout=15.0):
        """(exit code, the terminal's modes after) once the command ended."""
        deadline = time.time() + timeout
        while not os.path.exists(self.done):
            assert time.time() < deadline, "top did not end:\n" + self.screen()
            time.sleep(0.1)
        with open(self.done) as f:
            lines = f.read().split()
        return int(lines[0].split("=")[1]), set(lines[1:])

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def tmux(tmp_path):
    made = []

    def start(command, env="", width=80):
        made.append(Tmux(tmp_path, command, env, width))
        return made[-1]
    yield start
    for t in made:
        t.close()


SCREEN_FUNC = re.compile(r"^\s*([\d.]+)\s+([\d.]+)  (\S+)  ")


def screen_funcs(text):
    """{function: (own, total)} of the screen's table."""
    out = {}
    for line in text.splitlines()[8:-1]:
        m = SCREEN_FUNC.match(line)
        if m:
            out.setdefault(m.group(3), (float(m.group(1)), float(m.group(2))))
    return out


def shown(text):
    return "samples " in text and screen_funcs(text) and not text.splitlines()[1].startswith("samples 0 ")


@pytest.mark.one_version
def test_screen(interp, shared_target, tmux):
    """Both functions within 10 points, the status bars, the sort and pause keys, q."""
    pid, tids = start_two(shared_target, interp)
    t = tmux("%s top -m wall -p %d" % (PYBPFPROF, pid))
    text = t.wait_for(shown)
    lines = text.splitlines()
    assert len(lines) == 24 and lines[0].startswith("pybpfprof top ") and lines[-1].startswith(" o/t/n"), text
    funcs = screen_funcs(text)
    for func in ("work", "sleeper"):
        assert abs(funcs[func][0] - 100 / 3) <= TOLERANCE, text
    bars = {l.split()[1]: l.split()[3] for l in lines[3:6]}
    assert set(bars) == {"MainThread", "spinner-0", "sleeper-1"}, text
    assert bars["MainThread"].strip("S") == "" and "S" not in bars["spinner-0"], text
    assert bars["sleeper-1"].count("S") >= len(bars["sleeper-1"]) // 5, text
    # Sort by total: the outermost functions first; by name: alphabetical.
    t.keys("t")
    text = t.wait_for(lambda s: "by total)" in s)
    rows = list(screen_funcs(text).values())
    assert rows == sorted(rows, key=lambda r: -r[1]) and rows[0][1] >= 60, text
    t.keys("n")
    text = t.wait_for(lambda s: "by name)" in s)
    names = list(screen_funcs(text))
    assert names == sorted(names), text
    # Pause: the table stays as it is across intervals.
    t.keys("o", " ")
    paused = t.wait_for(lambda s: "[paused]" in s)
    time.sleep(2.5)
    assert t.screen() == paused
    t.keys(" ")
    t.wait_for(lambda s: "[paused]" not in s)
    # One thread alone, then all again.
    t.keys("Tab")
    text = t.wait_for(lambda s: "(thread " in s)
    assert len(screen_funcs(text)) >= 1
    t.keys("a")
    t.wait_for(lambda s: "(all threads" in s)
    # Cumulative: the samples since the start, growing by an interval's each second.
    t.keys("c")
    first = t.wait_for(lambda s: "since the start" in s)
    n = int(first.splitlines()[1].split()[1])
    t.wait_for(lambda s: int(s.splitlines()[1].split()[1]) >= n + 200)
    assert abs(screen_funcs(t.screen())["work"][0] - 100 / 3) <= TOLERANCE
    t.keys("q")
    code, modes = t.ended()
    assert code == 0 and modes == {"icanon", "echo"}, (code, modes, t.screen())


@pytest.mark.one_version
def test_screen_colour_and_no_color(interp, shared_target, tmux):
    pid, _ = start_two(shared_target, interp)
    coloured = tmux("%s top -m wall -p %d" % (PYBPFPROF, pid))
    plain = tmux("%s top -m wall -p %d" % (PYBPFPROF, pid), env="NO_COLOR=1")
    for t in (coloured, plain):
        t.wait_for(shown)
    assert re.search(r"\x1b\[3[0-7]m", coloured.screen(escapes=True))
    assert not re.search(r"\x1b\[3[0-7]m", plain.screen(escapes=True))
    for t in (coloured, plain):
        t.keys("q")
        assert t.ended()[0] == 0


@pytest.mark.one_version
def test_screen_ctrl_c_and_target_exit(interp, start_target, tmux):
    proc, pid, _ = start_target(interp, WORKERS, "spinner", "sleeper")
    by_signal = tmux("%s top -m wall -p %d" % (PYBPFPROF, pid))
    by_exit = tmux("%s top -m wall -p %d" % (PYBPFPROF, pid))
    for t in (by_signal, by_exit):
        t.wait_for(shown)
    by_signal.keys("C-c")
    code, modes = by_signal.ended()
    assert code == 0 and modes == {"icanon", "echo"}, (code, modes)
    proc.kill()
    code, modes = by_exit.ended()
    assert code == 0 and modes == {"icanon", "echo"}, (code, modes)


def test_screen_launched_command(tmux, tmp_path):
    """-- cmd on the full screen: the command's output goes to a pipe, its last
    line shown above the keys, its last 4 KiB on stderr at the end; top ends
    with the command and exits with its code."""
    script = tmp_path / "noisy.py"
    script.write_text("import time\nt = time.time()\nwhile time.time() - t < 4:\n"
                      "    print('noise', flush=True)\n    x = sum(range(100000))\n"
                      "raise SystemExit(3)\n")
    t = tmux("%s top -- python3 %s" % (PYBPFPROF, script))
    text = t.wait_for(lambda s: "<module>" in s and "command: noise" in s)
    lines = text.splitlines()
    assert lines[0].startswith("pybpfprof top ") and lines[-2] == "command: noise", text
    assert sum(1 for l in lines if "noise" in l) == 1, text
    code, modes = t.ended()
    assert code == 3 and modes == {"icanon", "echo"}, (code, modes)
    assert "noise\nnoise" in t.screen(), t.screen()


@pytest.mark.one_version
def test_plain_reader_gone(interp, shared_target):
    """stdout a pipe whose reader quit: top ends at its next table, EXIT_IO, nothing said."""
    pid, _ = start_two(shared_target, interp)
    p = subprocess.Popen([PYBPFPROF, "top", "-m", "wall", "-p", str(pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    try:
        first = p.stdout.readline()
        p.stdout.close()
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert first.startswith("pybpfprof top:")
    assert p.returncode == 10 and err == "", (p.returncode, err)


NAPPERS = """import os, sys, threading, time
def nap():
    while True:
        time.sleep(0.02)
for name in ("nap-0", "nap-1"):
    threading.Thread(target=nap, name=name, daemon=True).start()
for _ in range(600):
    if os.path.exists(sys.argv[1]):
        break
    time.sleep(0.1)
"""
KEYS = {"o/t/n by own/total/name", "c cumulative", "Tab/a thread/all", "space pause", "q quit"}


def thread_rows(text):
    """{name: (tid, samples, the rest)} of the screen's thread rows."""
    rows = {}
    for line in text.splitlines()[3:]:
        m = re.match(r"^(\d+) (\S+)\s+(\d+)(.*)$", line)
        if not m:
            break
        rows[m.group(2)] = (int(m.group(1)), int(m.group(3)), m.group(4))
    return rows


SPINNER = """import os, sys
while not os.path.exists(sys.argv[1]):
    sum(range(10000))
"""


def test_screen_narrow_header_whole_fields(tmux, tmp_path):
    """40 columns: the two header lines end with a whole field, never a
    number cut short ("GIL held 100.0%" once read "GIL held 10")."""
    script = tmp_path / "spinner.py"
    script.write_text(SPINNER)
    done = tmp_path / "spinner.done"
    t = tmux("%s top -- python3 %s %s" % (PYBPFPROF, script, done), width=40)
    text = t.wait_for(lambda s: re.search(r"^samples [1-9]", s, re.M) is not None)
    head = text.splitlines()[:2]
    done.write_text("")
    fields = [r"pybpfprof top", r"\d+ s", r"cpu mode \d+ Hz", r"1 process", r"last interval",
              r"by own"]
    assert re.match("^" + "(  ".join(fields[:1]) + "".join("(  %s" % f for f in fields[1:]) +
                    ")?" * (len(fields) - 1) + r"\s*$", head[0]), head
    fields = [r"samples \d+ \(\d+\.\d/s\)", r"lost \d+", r"GIL held \d+\.\d%",
              r"waited for \d+\.\d%"]
    assert re.match("^" + fields[0] + "".join("(  %s" % f for f in fields[1:]) +
                    ")?" * (len(fields) - 1) + r"\s*$", head[1]), head
    assert t.ended()[0] == 0, t.screen()


def test_screen_narrow(tmux, tmp_path):
    """30 columns: each thread row keeps its id, name and count (its bar, which
    no longer fits, left out rather than drawn over them); the keys line at
    30, 60 and 80 columns holds whole keys only, q always."""
    script = tmp_path / "nappers.py"
    script.write_text(NAPPERS)
    done = tmp_path / "nappers.done"
    t = tmux("%s top -m wall -- python3 %s %s" % (PYBPFPROF, script, done), width=30)
    text = t.wait_for(lambda s: len(thread_rows(s)) == 3 and min(r[1] for r in thread_rows(s).values()) > 0)
    rows = thread_rows(text)
    assert set(rows) == {"python3", "nap-0", "nap-1"} or set(rows) == {"MainThread", "nap-0", "nap-1"}, text
    assert all(r[2].strip() == "" for r in rows.values()), text
    for before, width in ((0, 30), (30, 60), (60, 80)):
        if before:
            t.tmux("resize-window", "-t", "top", "-x", str(width))
            text = t.wait_for(lambda s: max(len(ln) for ln in s.splitlines()) > before)
        keys = text.splitlines()[-1].strip().split("  ")
        assert keys[-1] == "q quit" and set(keys) <= KEYS, (width, text)
        if width == 80:
            assert set(keys) == KEYS, text
    bars = thread_rows(text)
    assert all(re.match(r"^\s+[A-Za-z?.]{10,} \w.* \d+%$", r[2]) for r in bars.values()), text  # room again: bars
    done.write_text("")
    assert t.ended()[0] == 0, t.screen()
