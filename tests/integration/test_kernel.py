"""Kernel frames (--kernel, issue 19): a thread blocked in select() reads
`...;selecting (kernwait.py:N);[kernel] ...;[kernel] do_select;...` in wall
mode (the kernel stack taken as it left the CPU), one in time.sleep
do_nanosleep, and in cpu mode a thread reading a file and asking for random
bytes has the system calls' frames under the line that made them. Without
the option no [kernel] frame at all. One target (kernwait.py) per run,
Debian's static 3.11 and a pyenv build; short recordings."""

import json
import os

from conftest import TARGETS
from profile import marks, parse_collapsed

INTERPRETERS = ["3.11-debian-static", "3.13"]
KERNWAIT = os.path.join(TARGETS, "kernwait.py")
K = "[kernel] "


def stats(stderr):
    """The --stats=json object (the last line that is one)."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(stderr[-2000:])


def under(stacks, mark):
    """(frames after the marked line, count) of each stack through it."""
    tail = "kernwait.py:%d)" % marks(KERNWAIT)[mark]
    out = []
    for frames, count in stacks:
        at = [i for i, f in enumerate(frames) if f.endswith(tail)]
        if at:
            out.append((frames[at[-1] + 1:], count))
    return out


def kernel_share(rows, names):
    """Samples whose frames after the line are all kernel ones, one of them in names; all samples."""
    hit = total = 0
    for after, count in rows:
        total += count
        if after and all(f.startswith(K) for f in after) and any(f in names for f in after):
            hit += count
    return hit, total


def wall_blocked_threads(pybpfprof, pid, out):
    """Wall mode, recorded as pprof and read back: the format carries them."""
    r = pybpfprof("-p", pid, "-m", "wall", "-d", "1.2", "-F", "99", "--kernel", "--stats=json",
                  "-o", out)
    assert r.returncode == 0, r.stderr
    back = pybpfprof("convert", "-i", out)
    assert back.returncode == 0, back.stderr
    stacks = parse_collapsed(back.stdout)
    for mark, names in (("select", {K + "do_select", K + "core_sys_select"}),
                        ("sleep", {K + "do_nanosleep", K + "hrtimer_nanosleep"})):
        hit, total = kernel_share(under(stacks, mark), names)
        # A stack read at a tick before the thread's first switch-out has none.
        assert total >= 80 and hit >= total * 0.7, (mark, hit, total, back.stdout[-3000:])
    ks = stats(r.stderr)["kernel_stacks"]
    assert ks["kept"] > 0 and ks["stacks"] > 0 and ks["symbols"] > 1000, ks


def cpu_system_calls(pybpfprof, pid):
    """cpu mode: the system calls' frames under the line that made them.
    Recorded again (4 times at most) until 40 such samples: the CPU the
    threads get, and so the samples, is what a loaded machine leaves."""
    reads = rnd = 0
    for _ in range(4):
        r = pybpfprof("-p", pid, "-d", "1.2", "-F", "199", "--kernel")
        assert r.returncode == 0, r.stderr
        stacks = parse_collapsed(r.stdout)
        reads += kernel_share(under(stacks, "read"), {K + "vfs_read", K + "ksys_read"})[0]
        rnd += kernel_share(under(stacks, "urandom"),
                            {K + "get_random_bytes_user", K + "__x64_sys_getrandom"})[0]
        # Every kernel frame is after the Python ones, never between them.
        for frames, _ in stacks:
            ks = [i for i, f in enumerate(frames) if f.startswith(K)]
            assert not ks or ks == list(range(ks[0], len(frames))), frames
        if reads + rnd >= 40 and reads > 0 and rnd > 0:
            break
    assert reads + rnd >= 40, (reads, rnd, r.stdout[-3000:])
    assert reads > 0 and rnd > 0, (reads, rnd, r.stdout[-3000:])


def no_kernel_frames_without_the_option(pybpfprof, pid):
    r = pybpfprof("-p", pid, "-m", "wall", "-d", "0.8", "-F", "99", "--stats=json")
    assert r.returncode == 0, r.stderr
    assert K not in r.stdout and r.stdout.strip(), r.stdout[-2000:]
    assert "kernel_stacks" not in stats(r.stderr)


def test_kernel_frames(interp, start_target, pybpfprof, tmp_path):
    """One target, three recordings: wall, cpu, and none without --kernel."""
    _, pid, _ = start_target(interp, "kernwait.py")
    wall_blocked_threads(pybpfprof, pid, tmp_path / "kernel.pb.gz")
    cpu_system_calls(pybpfprof, pid)
    no_kernel_frames_without_the_option(pybpfprof, pid)
