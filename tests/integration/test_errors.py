"""Errors are pybpfprof's own codes, never an errno read as one: top that
runs out of memory says so and exits 12 (it used to exit 10, I/O, because
the aggregate's "out of memory" code was the same number as EIO), and so
does a recording whose profile cannot be written for want of memory (it
mapped every failed write to 10)."""

import resource
import subprocess
import time

import pytest

from conftest import PYBPFPROF, SANITIZED
from nulldev import null
from profile import perf_events_open

EXIT_RESOURCES = 12
# What runs out of memory is the profiler, whatever it profiles: one interpreter.
INTERPRETERS = ["3.12"]


def vm_size_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    raise AssertionError("no VmSize for %d" % pid)


def out_of_memory(argv, tmp_path):
    """Run pybpfprof ARGV; once it samples (its perf events open), lower its
    address-space limit to what it has: the aggregate of new stacks
    (manycodes.py makes a new function for each call) soon needs more.
    Its exit code and stderr."""
    err = tmp_path / "pybpfprof.err"
    with open(str(err), "w") as e:
        run = subprocess.Popen([PYBPFPROF] + [str(a) for a in argv], stdout=null(), stderr=e,
                               stdin=null())
    try:
        deadline = time.monotonic() + 60
        while not perf_events_open(run.pid):
            assert run.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "not sampling after 60 s"
            time.sleep(0.02)
        limit = vm_size_kib(run.pid) * 1024
        subprocess.run(["prlimit", "--pid", str(run.pid), "--as=%d" % limit], check=True)
        code = run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return code, err.read_text()


@pytest.mark.skipif(SANITIZED, reason="ASan reserves terabytes of address space: no limit can be set")
def test_top_out_of_memory_exits_12(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "manycodes.py")
    code, text = out_of_memory(["top", "-p", pid, "-F", "999"], tmp_path)
    assert code == EXIT_RESOURCES, (code, text)
    assert "out of memory" in text and "ulimit -v" in text, text
    assert len(text.strip().splitlines()) == 1, text


@pytest.mark.skipif(SANITIZED, reason="ASan reserves terabytes of address space: no limit can be set")
def test_record_out_of_memory_exits_12(interp, start_target, tmp_path):
    proc, pid, ready = start_target(interp, "manycodes.py")
    out = tmp_path / "p.html"
    code, text = out_of_memory(["-p", pid, "-F", "999", "-d", "6", "-o", out], tmp_path)
    assert code == EXIT_RESOURCES, (code, text)
    assert "out of memory" in text, text
    assert not out.exists(), "a partial profile was left"


@pytest.mark.skipif(SANITIZED, reason="ASan reserves terabytes of address space: no limit can be set")
@pytest.mark.parametrize("cmd", ["convert", "diff"])
def test_read_back_out_of_memory_exits_12(tmp_path, cmd):
    """convert and diff of a profile too big for `ulimit -v`: a resource
    limit, named, exit 12 (it was exit 11, "out of memory", no limit said)."""
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_text("main;f 1\n")
    with open(str(big), "w") as f:
        for i in range(100000):
            f.write(";".join("m%d.f%d (x%d.py:%d)" % (j, i, j, i) for j in range(8)) + " 1\n")
    args = {"convert": ["convert", "-i", big, "-f", "html", "-o", tmp_path / "o.html"],
            "diff": ["diff", big, small, "-o", tmp_path / "o.html"]}[cmd]
    limit = 48 << 20
    # The same command on a small profile fits the limit: it is the big one that does not.
    ok = subprocess.run([PYBPFPROF] + [str(a) for a in args[:1]] +
                        ([ "-i", str(small), "-o", str(tmp_path / "s.html")] if cmd == "convert"
                         else [str(small), str(small), "-o", str(tmp_path / "s.html")]),
                        capture_output=True, text=True, timeout=60,
                        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert ok.returncode == 0, ok.stderr
    r = subprocess.run([PYBPFPROF] + [str(a) for a in args], capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert r.returncode == EXIT_RESOURCES, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines() == [
        "pybpfprof: out of memory (the address space limit is 49152 KiB: ulimit -v)"], r.stderr
