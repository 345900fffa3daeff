"""The command line as a new user meets it (issue 14, items 11, 14 and 16):
numbers that cannot be honoured are refused, option values in any case, a
mistyped subcommand named as such, resource limits named with their own exit
code, no terminal escapes where the terminal cannot take them, and a launched
command that is not Python given up on within the 10 s docs/usage.md promises; and
the end-of-run figures as JSON (--stats=json, issue 16), which make bench reads."""

import json
import os
import re
import pty
import select
import subprocess
import time

import pytest

from conftest import PYBPFPROF, SANITIZED, _discover
from profile import WORKERS, parse_collapsed, total
from nulldev import null

EXIT_OK, EXIT_USAGE, EXIT_NO_PROCESS, EXIT_NOT_PYTHON, EXIT_CORRUPT, EXIT_RESOURCES = 0, 2, 3, 4, 9, 12
NO_PID = "4194301"      # above any pid_max in use here: parses, then "no such process"


def run(*args, timeout=60, **kwargs):
    return subprocess.run([PYBPFPROF] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def first_interp():
    usable = [i for i in _discover() if not i.skip_reason]
    assert usable, "no interpreter"
    return usable[0]


def usage_error(r, *words):
    """Exit 2, and the first line of stderr (argp adds a --help hint after it) says what."""
    assert r.returncode == EXIT_USAGE, (r.returncode, r.stderr)
    first = r.stderr.splitlines()[0]
    for w in words:
        assert w in first, r.stderr


# --- item 14: numbers ---------------------------------------------------------

RANGES = {
    "-d": "(0.001 to 31536000 seconds)",
    "-F": "(1 to 100000 Hz)",
    "--max-processes": "(1 to 4096)",
}


@pytest.mark.parametrize("opt,value", [
    ("-d", "inf"), ("-d", "1e300"), ("-d", "2e10"), ("-d", "nan"), ("-d", "-1"), ("-d", "0"),
    ("-d", "0x10"), ("-d", " 1"), ("-d", "1s"), ("-d", ""), ("-d", "0.0001"), ("-d", "1e-400"),
    ("-d", "31536001"),
    ("-F", "4294972296"), ("-F", "4294967395"), ("-F", "18446744073709551615"),
    ("-F", "99999999999999999999999"), ("-F", "-5"), ("-F", "+99"), ("-F", " 99"), ("-F", "99x"),
    ("-F", "1e3"), ("-F", "0"), ("-F", "100001"), ("-F", ""),
    ("--max-processes", "4294967297"), ("--max-processes", "-1"), ("--max-processes", "0"),
    ("--max-processes", "4097"), ("--max-processes", "16x"),
])
def test_numbers_that_cannot_be_honoured_are_refused(opt, value):
    r = run(opt, value, "-a" if opt == "--max-processes" else "-p", NO_PID)
    usage_error(r, "invalid", "'%s'" % value, RANGES[opt])


@pytest.mark.parametrize("value", ["4294967297", "+1", " 1", "1x", "-1", "99999999999999999999",
                                   "", "1,,2", "1,", ",1"])
def test_pids_that_do_not_parse_are_refused(value):
    usage_error(run("-p", value), "invalid pid list '%s'" % value)
    usage_error(run("-a", "--exclude-pid", value), "invalid pid list '%s'" % value)
    if "," not in value:
        usage_error(run("dump", "-p", value), "invalid pid")


def test_pid_lists_taken():
    r = run("-p", "%s,%s" % (NO_PID, NO_PID), "-p", NO_PID)
    assert r.returncode == EXIT_NO_PROCESS, r.stderr


@pytest.mark.parametrize("value", ["4294967395", "0", "-5", "99x"])
def test_convert_frequency_refused(value, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("a;b 3\n")
    usage_error(run("convert", "-i", src, "-F", value), "invalid frequency", "(1 to 100000 Hz)")


@pytest.mark.parametrize("args", [["-d", "1.5"], ["-d", "2e0"], ["-d", ".5"], ["-d", "0.001"],
                                  ["-d", "31536000"], ["-F", "1"], ["-F", "100000"],
                                  ["-F", "0099"], ["-a", "--max-processes", "4096"]])
def test_numbers_in_range_are_taken(args):
    """They get past the command line: to the missing pid (3), or with -a to a run."""
    if "-a" in args:
        r = run(*(args + ["-d", "0.2", "-q", "-p", NO_PID]))
        assert r.returncode == EXIT_OK, r.stderr
    else:
        r = run(*(args + ["-p", NO_PID]))
        assert r.returncode == EXIT_NO_PROCESS, r.stderr


# --- item 16: option values in any case; the mistyped subcommand ------------

@pytest.mark.parametrize("args", [["-m", "CPU"], ["-m", "Wall"], ["-m", "GIL"], ["-f", "HTML"],
                                  ["-f", "Pprof"]])
def test_option_values_any_case(args):
    r = run(*(args + ["-p", NO_PID]))
    assert r.returncode == EXIT_NO_PROCESS, r.stderr


def test_convert_option_values_any_case(tmp_path):
    """-m WALL is -m wall, to the byte: the canonical name goes in the file."""
    src = tmp_path / "in.txt"
    src.write_text("main;work 30\nmain;idle 10\n")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    r = run("convert", "-i", src, "-o", a, "-m", "WALL", "-f", "SPEEDSCOPE")
    assert r.returncode == EXIT_OK, r.stderr
    r = run("convert", "-i", src, "-o", b, "-m", "wall", "-f", "speedscope")
    assert r.returncode == EXIT_OK, r.stderr
    assert a.read_bytes() == b.read_bytes()
    usage_error(run("convert", "-i", src, "-m", "walls"), "invalid mode 'walls'")


def test_convert_input_as_its_argument(tmp_path):
    """convert FILE reads FILE, as -i FILE does (pprof and perf report take
    their input so); a second input, either way, is refused."""
    src = tmp_path / "in.txt"
    src.write_text("main;work 30\nmain;idle 10\n")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    r = run("convert", src, "-o", a)
    assert r.returncode == EXIT_OK, r.stderr
    r = run("convert", "-i", src, "-o", b)
    assert r.returncode == EXIT_OK, r.stderr
    assert a.read_bytes() == b.read_bytes() and b"work" in a.read_bytes()
    usage_error(run("convert", src, src), "the input is given once")
    usage_error(run("convert", "-i", src, src), "the input is given once")


@pytest.mark.parametrize("argv", [["dumpp", "-p", "1"], ["record", "-p", "1"],
                                  ["python3", "app.py"], ["convrt"]])
def test_unknown_subcommand(argv):
    r = run(*argv)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert r.stderr.splitlines() == [
        "pybpfprof: unknown subcommand '%s' (top, dump, convert, diff or agent; a command to profile goes "
        "after --)" % argv[0]]


# --- item 16: the live line on a terminal that cannot erase ----------------------

def run_on_pty(args, env, seconds):
    """pybpfprof with stderr on a pseudo-terminal: (exit code, all it wrote there)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([PYBPFPROF] + [str(a) for a in args], stdin=null(),
                         stdout=null(), stderr=slave, env=env)
    os.close(slave)
    got = b""
    deadline = time.monotonic() + seconds + 30
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:     # EIO: the last writer closed the terminal
                    break
                if not chunk:
                    break
                got += chunk
            elif p.poll() is not None:
                break
        return p.wait(timeout=30), got
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)


@pytest.mark.parametrize("term", ["dumb", "", None])
def test_no_escapes_when_term_cannot_take_them(start_target, tmp_path, term):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    env = dict(os.environ)
    env.pop("TERM", None)
    if term is not None:
        env["TERM"] = term
    code, got = run_on_pty(["-p", pid, "-d", "2.5", "-o", tmp_path / "o.txt"], env, 2.5)
    assert code == EXIT_OK, got
    assert b"pybpfprof: 1 s, " in got, "no live line: the test shows nothing"
    assert b"\x1b" not in got, got[:400]


def test_escapes_where_term_erases(start_target, tmp_path):
    """The other side: a terminal that knows ESC [ K gets it (the live line
    is erased, not padded)."""
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    env = dict(os.environ, TERM="xterm")
    code, got = run_on_pty(["-p", pid, "-d", "1.5", "-o", tmp_path / "o.txt"], env, 1.5)
    assert code == EXIT_OK, got
    assert b"\r\x1b[Kpybpfprof: 1 s, " in got


def test_no_live_line_off_a_terminal(start_target, tmp_path):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    r = run("-p", pid, "-d", "1.5", "-o", tmp_path / "o.txt", env=dict(os.environ, TERM="xterm"))
    assert r.returncode == EXIT_OK, r.stderr
    assert "\x1b" not in r.stderr and "\r" not in r.stderr


# --- item 16: a launched command that is not Python -----------------------------

def test_launch_not_python_gives_up_within_10s(tmp_path):
    """docs/usage.md: no interpreter within 10 s is "not a Python process", exit 4:
    said then, not when the command ends, and the command is stopped. Looking
    for an interpreter that never comes costs little CPU (the same 10 s:
    waiting them out twice took 10 s of the suite)."""
    marker = "40.%d" % os.getpid()     # a sleep of ours, to find it afterwards
    err_path = tmp_path / "err"
    t0 = time.monotonic()
    with open(str(err_path), "w") as err_file:
        p = subprocess.Popen([PYBPFPROF, "-o", str(tmp_path / "o.txt"), "--", "/bin/sleep", marker],
                             stdin=null(), stdout=null(), stderr=err_file)
    try:
        status, ru = None, None
        while status is None and time.monotonic() < t0 + 60:
            pid, st, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                status, ru = st, usage
            else:
                time.sleep(0.1)
    finally:
        if status is None:
            p.kill()
            p.wait()
    seconds = time.monotonic() - t0
    assert status is not None, "still running after 60 s"
    p.returncode = os.waitstatus_to_exitcode(status)
    err = err_path.read_text()
    assert p.returncode == EXIT_NOT_PYTHON, err
    assert err.splitlines() == ["pybpfprof: '/bin/sleep': not a Python process "
                                "(no _PyRuntime found); stopping it"]
    # 10 s from the command's start; loading the sampler before it takes a
    # moment more on a loaded machine. Waiting for the command took 40 s.
    assert 9.5 <= seconds < 20, seconds
    cpu = ru.ru_utime + ru.ru_stime
    # ASan's start-up and checks take CPU of their own
    assert SANITIZED or cpu < 1.5, "%.2f s of CPU in %.1f s waiting" % (cpu, seconds)
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    left.append(pid)
        except OSError:
            pass
    assert left == [], "the command was left running"


FAKE_313 = r"""
#include <unistd.h>
/* What a 3.13 exports, but its runtime begins with other bytes than _Py_DebugOffsets. */
char _PyRuntime[4096] = "not a debug table";
const unsigned int Py_Version = PY_VERSION_HEX;
char PyCode_Type[512];
int main(void) { _PyRuntime[100]++; PyCode_Type[0]++; pause(); return 0; }
"""


def compile_fake(tmp_path, hexversion, name="fake"):
    """FAKE_313 built to say hexversion in its Py_Version."""
    src, exe = tmp_path / (name + ".c"), tmp_path / name
    src.write_text(FAKE_313)
    subprocess.run(["cc", "-O1", "-rdynamic", "-DPY_VERSION_HEX=%#x" % hexversion, str(src), "-o", str(exe)],
                   check=True)
    return exe


@pytest.mark.parametrize("hexversion,says", [
    (0x030d00f0, "Python 3.13.0 without the _Py_DebugOffsets that begins every 3.13+ runtime"),
    (0x030e00f0, "Python 3.14.0 without the _Py_DebugOffsets that begins every 3.13+ runtime"),
    (0x030600f0, "Python 3.6.0 with a _PyRuntime, which 3.6 does not have"),
], ids=["3.13", "3.14", "3.6"])
def test_version_its_memory_denies_is_inconsistent_not_unsupported(tmp_path, hexversion, says):
    """3.13 is supported: one that says 3.13 and lacks the table every 3.13
    begins _PyRuntime with is damaged memory (exit 9), never "unsupported
    Python version 3.13.0" (exit 5), by -p and by a launch alike; so is a
    3.6 with a _PyRuntime (3.6 has none)."""
    exe = compile_fake(tmp_path, hexversion)
    want = says + ": target memory is inconsistent"
    p = subprocess.Popen([str(exe)])
    try:
        for args in (["dump", "-p", p.pid], ["-p", p.pid, "-d", "1", "-o", tmp_path / "p.txt"]):
            r = run(*args)
            assert (r.returncode, r.stderr) == (EXIT_CORRUPT, "pybpfprof: pid %d: %s\n" % (p.pid, want))
    finally:
        p.kill()
        p.wait()
    r = run("-o", tmp_path / "l.txt", "--", exe)
    assert (r.returncode, r.stderr) == (EXIT_CORRUPT, "pybpfprof: '%s': %s; stopping it\n" % (exe, want))


# --- item 11: resource limits -------------------------------------------------

# The messages are patterns: where memory runs out first (before or while
# attaching) moves with the libraries the program loads. 24 MiB: enough for
# the dynamic loader to map them (libcurl's brings Kerberos and LDAP), not
# for a run.
@pytest.mark.parametrize("limit,message", [
    ("--nofile=16", re.escape("too many open files (the limit is 16 per process: ulimit -n)")),
    ("--nofile=5", re.escape("too many open files (the limit is 5 per process: ulimit -n)")),
    pytest.param("--as=%d" % (24576 * 1024),
                 r"(pid \d+: )?" + re.escape("out of memory (the address space limit is 24576 KiB: ulimit -v)"),
                 marks=pytest.mark.skipif(SANITIZED, reason="ASan cannot start in 20 MB of "
                                          "address space: it reserves terabytes of shadow")),
])
@pytest.mark.parametrize("mode", ["cpu", "wall"])
def test_resource_limit_named(start_target, tmp_path, limit, message, mode):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    r = subprocess.run(["prlimit", limit, PYBPFPROF, "-p", str(pid), "-m", mode, "-d", "1",
                        "-o", str(tmp_path / "o.txt")], capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_RESOURCES, r.stderr
    assert len(r.stderr.splitlines()) == 1 and re.fullmatch("pybpfprof: " + message, r.stderr.strip()), r.stderr
    assert proc.poll() is None


def test_resource_limit_named_by_dump(start_target):
    proc, pid, ready = start_target(first_interp(), WORKERS, "spinner")
    r = subprocess.run(["prlimit", "--nofile=4", PYBPFPROF, "dump", "-p", str(pid)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_RESOURCES, r.stderr
    assert r.stderr.splitlines() == [
        "pybpfprof: pid %d: too many open files (the limit is 4 per process: ulimit -n)" % pid]


# --- issue 16: the end-of-run figures as JSON -----------------------------------

# docs/usage.md, "End-of-run figures as JSON": every key, always present.
STATS_KEYS = {
    "mode", "hz", "hz_asked", "rate_capped", "seconds", "samples", "interrupts_per_cpu_s",
    "program_cpu_share", "program_ns", "interrupt_us", "fired", "taken", "delivered", "lost",
    "budget_skipped", "truncated", "faulted", "snapped", "snap_lost", "completed", "failed",
    "short_of_root", "elided", "unknown_frames", "no_python", "stacks_reused", "unattributed",
    "unowned", "ticks", "late_ticks",
    "tick_stacks", "thread_lists", "thread_list_seconds", "thread_lists_spared", "labels_made", "labels_kept",
    "thread_name_reads",
    "thread_names_checked", "thread_names_unsampled", "stacks", "locations", "processes",
    "execs", "not_profiled", "followed", "not_followed", "kernel_walk",
}
PROCESS_KEYS = {
    "pid", "python", "page_hits", "page_misses", "page_evictions", "reads", "read_bytes",
    "read_faults", "code_hits", "code_misses", "code_reused", "code_unreadable", "gil_ticks",
    "gil_held", "gil_contended",
}


def test_stats_json(start_target, tmp_path):
    """One JSON line in place of the summary; its figures agree with the profile."""
    interp = first_interp()
    proc, pid, ready = start_target(interp, WORKERS, "spinner")
    out = tmp_path / "out.txt"
    r = run("-p", pid, "-F", 199, "-d", 1.5, "--stats=json", "-o", out)
    assert r.returncode == EXIT_OK, r.stderr
    objs = [l for l in r.stderr.splitlines() if l.startswith("{")]
    assert len(objs) == 1, r.stderr
    assert "samples in" not in r.stderr and "page cache" not in r.stderr, r.stderr
    st = json.loads(objs[0])
    assert set(st) == STATS_KEYS, sorted(set(st) ^ STATS_KEYS)
    assert (st["mode"], st["hz"], st["hz_asked"], st["rate_capped"]) == ("cpu", 199, 199, None)
    assert st["samples"] == total(parse_collapsed(out.read_text())) > 0
    counts = [k for k in STATS_KEYS if k not in ("mode", "rate_capped", "tick_stacks", "processes", "kernel_walk",
                                                  "execs", "not_profiled", "followed") and "seconds" not in k
              and k not in ("interrupts_per_cpu_s", "program_cpu_share", "interrupt_us")]
    assert all(type(st[k]) is int and st[k] >= 0 for k in counts), st
    assert st["delivered"] <= st["taken"] <= st["fired"], st
    assert st["samples"] <= st["delivered"] and st["program_ns"] > 0, st
    # A spinning thread gives the same stacks again: those are not named again, and still counted.
    assert st["stacks_reused"] <= st["samples"] and (st["stacks_reused"] > 0 or st["samples"] < 50), st
    assert 1.0 <= st["seconds"] <= 3.0 and 0 < st["program_cpu_share"] < 1, st
    assert st["ticks"] == 0 and st["execs"] == [] and st["not_profiled"] == []
    assert set(st["tick_stacks"]) == {"reused", "from_kernel", "from_switch", "read_now",
                                      "late_switches", "states_guessed"}
    assert set(st["kernel_walk"]) == {"bulk_frames", "frame_reads", "bulk_copies", "code_hits",
                                      "code_misses"}
    assert len(st["processes"]) == 1, st["processes"]
    p = st["processes"][0]
    assert set(p) == PROCESS_KEYS and p["pid"] == pid, p
    assert p["python"].startswith("%d.%d." % tuple(ready["version"][:2])), (p, ready)

    # With -q the line is all of stderr; --stats=none leaves no summary.
    r = run("-p", pid, "-F", 99, "-d", 0.5, "-q", "--stats=JSON", "-o", out)
    assert r.returncode == EXIT_OK, r.stderr
    assert len(r.stderr.splitlines()) == 1 and json.loads(r.stderr)["mode"] == "cpu", r.stderr
    r = run("-p", pid, "-F", 99, "-d", 0.5, "--stats=none", "-o", out)
    assert r.returncode == EXIT_OK, r.stderr
    assert all(l.startswith("pybpfprof: warning: ") for l in r.stderr.splitlines()), r.stderr


def test_stats_form_refused():
    r = run("--stats=xml", "-p", NO_PID)
    usage_error(r, "invalid --stats 'xml' (text, json or none)")
    assert r.stderr.splitlines()[1:] == ["Try `pybpfprof --help' or `pybpfprof --usage' for more "
                                         "information."], r.stderr
    assert run("--stats=None", "-p", NO_PID).returncode == EXIT_NO_PROCESS
