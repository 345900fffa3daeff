"""Targets in their own PID namespace, one and two levels deep (a container,
and a container inside one), on every interpreter: `unshare --pid --fork
--mount-proc` (inside the sid chroot for 3.14) is what a container is to a
profiler. CPython knows its threads by the ids of its own namespace; the
kernel and our /proc by ours. Every check of the host tests holds here too,
with the target's inner ids shown beside ours. The harness translates the
ready file's ids to host ids (conftest._from_pidns) so the same assertions
apply."""

import json
import os
import re
import subprocess
import time

import pytest

import test_dump
import test_record
from conftest import PYBPFPROF, TARGETS, _discover, nspids, pybpfprof
from profile import WORKERS, by_thread, func_of, no_bpf_leftovers, parse_collapsed
from test_host import go_raw, raw_samples, script_for, tag_of
from test_modes import record_modes, share, start_four, status_share

# One level deep on every family: which of its ids a thread state holds,
# and whether it is the inner one, is the interpreter's. The second level
# is one more step of our own map from /proc (NSpid), the same whatever
# the interpreter: one interpreter's runs (one_version) check it.
LEVELS = [pytest.param(1, id="pidns1"), pytest.param(2, id="pidns2", marks=pytest.mark.one_version)]


@pytest.fixture(params=LEVELS)
def levels(request):
    return request.param


@pytest.fixture
def ns_start(start_target, levels):
    """start_target, the target `levels` PID namespaces deep."""
    def start(interp, script, *args, **kwargs):
        return start_target(interp, script, *args, pidns=levels, **kwargs)
    return start


def test_target_is_in_its_own_namespace(interp, ns_start, levels):
    proc, pid, ready = ns_start(interp, WORKERS, "idle")
    ids = nspids(pid)
    assert len(ids) == levels + 1 and ids[0] == pid and ids[-1] == ready["ns_pid"] != pid


def test_cpu_split(interp, ns_start, tmp_path):
    test_record.test_cpu_split_matches_target(interp, ns_start, tmp_path)


def test_dump_matches_target(interp, ns_start, pybpfprof):
    test_dump.test_dump_matches_target(interp, ns_start, pybpfprof)


@pytest.mark.families
def test_inner_ids_shown(interp, ns_start, pybpfprof, tmp_path):
    proc, pid, ready = ns_start(interp, WORKERS, "spinner", "idle")
    spinner = next(t["native_id"] for t in ready["threads"] if t["kind"] == "spinner")
    inner = ready["ns"]

    got = test_dump.dump_json(pybpfprof, pid)
    assert got["pid"] == pid and got["ns_pid"] == ready["ns_pid"]
    assert {t["tid"]: t["ns_tid"] for t in got["threads"]} == {
        t: inner[t] for t in [ready["main_native_id"]] + [x["native_id"] for x in ready["threads"]]}
    text = pybpfprof("dump", "-p", pid).stdout
    assert "Process %d (%d in its namespace): " % (pid, ready["ns_pid"]) in text
    assert 'Thread %d (%d in its namespace) "' % (spinner, inner[spinner]) in text

    out = tmp_path / "t.txt"
    r = pybpfprof("-p", pid, "-d", 2, "-t", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "pid %d (%d in its namespace) (Python " % (pid, ready["ns_pid"]) in r.stderr
    assert re.search(r"thread %d +\(%d in its namespace\) " % (spinner, inner[spinner]), r.stderr)
    assert "matched no Python thread" not in r.stderr
    roots = {line.split(";")[0] for line in out.read_text().splitlines()}
    assert any(root.startswith("thread %d (%d in its namespace) " % (spinner, inner[spinner]))
               for root in roots), roots
    # The tool's own round trip: convert reads the label back to the same thread.
    pb = tmp_path / "t.pb.gz"
    r = pybpfprof("convert", "-i", out, "-o", pb)
    assert r.returncode == 0, r.stderr
    threads = {s.get("thread_id") for s in raw_samples(go_raw(pb))}
    assert str(spinner) in threads, threads

    pb = tmp_path / "p.pb.gz"
    r = pybpfprof("-p", pid, "-d", 2, "-o", pb)
    assert r.returncode == 0, r.stderr
    labels = raw_samples(go_raw(pb))
    assert labels and all(s.get("pid") == str(pid) and s.get("ns_pid") == str(ready["ns_pid"])
                          for s in labels), labels[:3]


@pytest.mark.one_version
def test_modes(interp, start_target, tmp_path):
    """cpu, gil and wall mode as test_modes checks them on the host, one
    namespace deep: the modes read ids only through the map the cpu-split,
    dump and inner-id tests check at both depths, so depth 2 adds nothing
    here but minutes to `make test`; nor do more interpreters than one (the
    modes' per-version reading is test_modes', on every one). The three
    recorded at once, over the same 3 s (one after the other took 9 s)."""
    pid, t = start_four(lambda *a: start_target(*a, pidns=1), interp)
    runs = record_modes(tmp_path, pid, {"cpu": 499, "gil": 199, "wall": 199})
    threads, err = runs["cpu"]
    assert share(threads, t["spinner"]) + share(threads, t["hasher"]) >= 0.97, err
    assert status_share(threads[t["hasher"]], "[native, no GIL]") >= 0.80, err
    threads, err = runs["gil"]
    assert share(threads, t["spinner"]) >= 0.85, err
    threads, err = runs["wall"]
    assert set(threads) == set(t.values()), err
    for kind, tid in t.items():
        assert abs(share(threads, tid) - 1 / len(t)) <= 0.05, (kind, share(threads, tid), err)
    assert status_share(threads[t["waiter"]], "[sleeping]") >= 0.95
    assert "GIL held" in err


def test_thread_names(interp, ns_start, pybpfprof):
    proc, pid, ready = ns_start(interp, os.path.join(TARGETS, "named_threads.py"), "basic")
    want = {t["native_id"]: t["name"] for t in ready["threads"]}
    got = test_dump.dump_json(pybpfprof, pid)
    assert {t["tid"]: t["name"] for t in got["threads"]} == want


def raw_counted(raw):
    """(sample count, labels) of each sample in `go tool pprof -raw` output."""
    body = raw.split("Samples:", 1)[1].split("Locations", 1)[0]
    out = []
    for line in body.splitlines():
        m = re.match(r"^\s+(\d+)\s+\d+:", line)
        if m:
            out.append((int(m.group(1)), {}))
        elif out and line.strip():
            out[-1][1].update(re.findall(r"(\w+):\[([^\]]*)\]", line))
    return out


@pytest.mark.serial
def test_whole_host(start_target, tmp_path):
    """-a: each interpreter in a namespace (one or two deep, by turns) is
    found, with its version, its function, and both of its pids."""
    interps = [i for i in _discover() if not i.skip_reason]
    pids = {}
    for n, i in enumerate(interps):
        proc, pid, ready = start_target(i, script_for(tmp_path, i), pidns=1 + n % 2)
        pids[pid] = (i, ready)
    out = tmp_path / "host.pb.gz"
    r = subprocess.run([PYBPFPROF, "-a", "-F", "49", "-d", "4", "-t", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    labels, counts = {}, {}
    for count, s in raw_counted(go_raw(out)):
        pid = int(s.get("pid", 0))
        if pid in pids:
            labels.setdefault(pid, []).append(s)
            counts[pid] = counts.get(pid, 0) + count
    for pid, (interp, ready) in pids.items():
        assert counts.get(pid, 0) >= 10, "%s (pid %d) got %d samples\n%s" % (
            interp.name, pid, counts.get(pid, 0), r.stderr)
        got = labels[pid]
        assert {s.get("ns_pid") for s in got} == {str(ready["ns_pid"])}, interp.name
        assert {s.get("python_version") for s in got} == {"%d.%d.%d" % tuple(ready["version"])}
    assert no_bpf_leftovers()


def test_unmatched_samples_are_reported(tmp_path):
    """Samples the kernel delivered for a target that no Python thread claims
    are said at the end, never a silent empty profile: a Python process whose
    only busy threads are C threads (strlen over 64 MiB, started by ctypes)."""
    interp = next((i for i in _discover() if not i.skip_reason and not i.chrooted), None)
    if interp is None:
        pytest.skip("no interpreter")
    code = ("import ctypes, time\n"
            "libc = ctypes.CDLL(None)\n"
            "buf = ctypes.create_string_buffer(b'x' * (64 << 20))\n"
            "start = libc.strlen\n"
            "t = (ctypes.c_ulong * 8)()\n"
            "end = time.time() + 2.5\n"
            "while time.time() < end:\n"
            "    for i in range(2): libc.pthread_create(ctypes.byref(t, 8 * i), None, start, buf)\n"
            "    for i in range(2): libc.pthread_join(ctypes.c_ulong(t[i]), None)\n")
    out = tmp_path / "c.txt"
    r = pybpfprof("-o", out, "--", interp.host_executable, "-c", code, timeout=60)
    assert r.returncode == 0, r.stderr
    m = re.search(r"warning: (\d+) of (\d+) samples delivered by the kernel matched no Python thread",
                  r.stderr)
    assert m and int(m.group(1)) >= 20, r.stderr


INSIDE = r'''
set -eu
# Runs in a new PID namespace: the target, then pybpfprof, both inside.
export PBP_READY="$1"; shift
out="$1"; mode="$2"; deeper="$3"; shift 3
if [ "$deeper" = 1 ]; then
    unshare --pid --fork --kill-child --mount-proc="$PROC" "$@" spinner idle &
else
    "$@" spinner idle &
fi
for i in $(seq 500); do [ -e "$READY_HOST" ] && break; sleep 0.02; done
pid=$(python3 - "$READY_HOST" "$deeper" <<'PY'
import json, os, sys
ready = json.load(open(sys.argv[1]))
if sys.argv[2] == "0":
    print(ready["pid"])
else:   # the target's pid as this namespace sees it: its NSpid ends in ready's pid
    for p in os.listdir("/proc"):
        try:
            ids = [l.split()[1:] for l in open("/proc/%s/status" % p) if l.startswith("NSpid:")][0]
        except (OSError, IndexError):
            continue
        if len(ids) == 2 and int(ids[-1]) == ready["pid"] and "python" in os.readlink("/proc/%s/exe" % p):
            print(p)
PY
)
echo "inner pid $pid" >&2
# Recorded again (up to 5 times, the profiles added up) until 50 samples:
# a loaded machine gives the spinner little CPU in 2 s.
: > "$out"
for try in 1 2 3 4 5; do
    "$PBP_BIN" -p "$pid" -m "$mode" -F 199 -d 2 -t -o "$out.$try"
    cat "$out.$try" >> "$out"
    [ "$(awk '{ s += $NF } END { print s + 0 }' "$out")" -ge 50 ] && break
done
'''


@pytest.mark.families
@pytest.mark.parametrize("mode,deeper", [("cpu", 0), ("wall", 1)],
                         ids=["cpu-same-namespace", "wall-target-one-deeper"])
def test_profiler_inside_a_namespace(interp, tmp_path, mode, deeper):
    """pybpfprof in a PID namespace of its own (a sidecar sharing the target's
    process namespace, a pod without hostPID): -p takes the pid as it sees
    it, and the kernel side reports that namespace's ids. cpu mode exercises
    the samples' ids, wall mode the scheduler's and the thread table's too,
    so each runs in one of the two layouts."""
    host_dir, in_dir = interp.mkdtemp()
    ready_host = os.path.join(host_dir, "ready.json")
    script = tmp_path / "inside.sh"
    script.write_text(INSIDE)
    out = tmp_path / "out.txt"
    proc_dir = os.path.join(interp.root, "proc") if interp.chrooted else "/proc"
    env = dict(os.environ, READY_HOST=ready_host, PROC=proc_dir, PBP_BIN=PYBPFPROF)
    cmd = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", str(script),
           os.path.join(in_dir, "ready.json"), str(out), mode, str(deeper)]
    cmd += interp.cmd(interp.place(WORKERS))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    with open(ready_host) as f:
        ready = json.load(f)
    threads = by_thread(parse_collapsed(out.read_text()))
    spinner = next(t["native_id"] for t in ready["threads"] if t["kind"] == "spinner")
    idle = next(t["native_id"] for t in ready["threads"] if t["kind"] == "idle")
    # Ids are the profiler's namespace's: the target's own when they share it.
    tid_of = {}
    for tid, stacks in threads.items():
        for frames, _ in stacks:
            for f in frames:
                tid_of.setdefault(func_of(f), set()).add(tid)
    if not deeper:
        assert tid_of.get("spinner") == {spinner}, (tid_of, r.stderr)
    else:
        assert len(tid_of.get("spinner", ())) == 1, (tid_of, r.stderr)
    total_samples = sum(c for v in threads.values() for _, c in v)
    spins = sum(c for v in threads.values() for fr, c in v if "spinner" in map(func_of, fr))
    assert total_samples >= 50, r.stderr
    if mode == "cpu":
        assert spins / total_samples >= 0.9, r.stderr
        assert "idle" not in tid_of
    else:
        assert "idle" in tid_of and (deeper or tid_of["idle"] == {idle}), (tid_of, r.stderr)
        assert len(threads) == 3, (sorted(threads), r.stderr)
    assert "matched no Python thread" not in r.stderr


def test_profiler_in_a_namespace_with_the_hosts_proc():
    """A profiler in a PID namespace that sees the host's /proc cannot match
    the two: one clear line and exit 6, for record and dump alike, never a
    silently empty profile."""
    for sub in (["-p", "1", "-d", "1"], ["dump", "-p", "1"]):
        r = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", PYBPFPROF] + sub,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 6, (sub, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "/proc belongs to another PID namespace" in lines[0], r.stderr
