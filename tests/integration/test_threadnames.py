"""Thread names: `pybpfprof dump` must name each thread as threading does
(Thread.name, read from outside), and fall back to the kernel's comm only
for threads threading does not know, on every interpreter."""

import json
import os

import pytest

from conftest import TARGETS

# Each reads what a layout gives: on every interpreter, not one of each family.
pytestmark = pytest.mark.every_version

NAMED = os.path.join(TARGETS, "named_threads.py")
NAME_MAX = 63   # bytes pybpfprof keeps of a name (struct pythread_name)


def dump_json(pybpfprof, pid):
    r = pybpfprof("dump", "-p", pid, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def comm(pid, tid):
    with open("/proc/%d/task/%d/comm" % (pid, tid), "rb") as f:
        return f.read().rstrip(b"\n").decode("utf-8", "replace")


def truncated(name):
    """A name as pybpfprof shows it: at most NAME_MAX bytes, whole characters,
    a lone surrogate (no UTF-8 for it) as "?"."""
    out = ""
    for ch in name:
        if 0xd800 <= ord(ch) <= 0xdfff:
            ch = "?"
        if len((out + ch).encode()) > NAME_MAX:
            break
        out += ch
    return out


def dump_names(pybpfprof, pid):
    got = dump_json(pybpfprof, pid)
    assert got["pid"] == pid
    return {t["tid"]: t["name"] for t in got["threads"]}


def test_names_basic(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, NAMED, "basic")
    want = {t["native_id"]: t["name"] for t in ready["threads"]}
    assert sorted(want.values()) == sorted(["MainThread", "alpha", "beta-2", "ünïcode-名前"])
    assert dump_names(pybpfprof, pid) == want


def test_names_text(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, NAMED, "basic")
    r = pybpfprof("dump", "-p", pid)
    assert r.returncode == 0, r.stderr
    for t in ready["threads"]:
        assert 'Thread %d "%s" (' % (t["native_id"], t["name"]) in r.stdout, t


def test_names_tricky(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, NAMED, "tricky")
    got = dump_names(pybpfprof, pid)
    want = {}
    for t in ready["threads"]:
        tid = t["native_id"]
        # Only the bare _thread thread has no Python name: comm it is.
        want[tid] = truncated(t["name"]) if t["name"] is not None else comm(pid, tid)
    assert got == want
    roles = {t["role"]: t for t in ready["threads"]}
    assert roles["renamed"]["name"] == "renamed-later"
    assert roles["dummy"]["name"].startswith("Dummy-")
    assert roles["bare"]["name"] is None
    assert got[roles["long-cjk"]["native_id"]] == "名" * 21
    assert got[roles["surrogate"]["native_id"]] == "bad-?"


def test_names_many(interp, start_target, pybpfprof):
    proc, pid, ready = start_target(interp, NAMED, "many")
    want = {t["native_id"]: t["name"] for t in ready["threads"]}
    assert len(want) == 304
    assert dump_names(pybpfprof, pid) == want



EXIT_CORRUPT = 9


def test_names_churn(interp, start_target, pybpfprof):
    """Threads come and go while dump reads _active: a name it shows is a
    real one, or the thread's comm when threading has none for it (yet), or
    "" when the thread was gone before its comm could be read (or its tid
    could not be told: a thread state its thread has not taken up yet). A
    thread that lives throughout has its own name in most dumps, its comm
    in the others (every read of the registries met a table being rebuilt).

    The thread-state walk itself (thread.c) can still meet a thread state
    freed under it and then fails the whole dump ("address not mapped in the
    target", exit 9): such runs are counted, not judged, here."""
    proc, pid, ready = start_target(interp, NAMED, "churn")
    fixed = {t["native_id"]: t["name"] for t in ready["threads"]}
    spawner = [t["native_id"] for t in ready["threads"] if t["role"] == "spawner"][0]
    # A new thread's comm is its starter's until it sets its own, which 3.14
    # does at its start, from Thread.name (so the spawner's comm is
    # "spawner"): a churn thread shown before that has the spawner's comm,
    # and by the time it is checked here its own.
    spawner_comm = comm(pid, spawner)
    fixed_comm = {tid: comm(pid, tid) for tid in fixed}
    # Each dump reads the registries up to 8 times and shows a thread's comm
    # when every read met a table being rebuilt: seen under load (8-10), a
    # fixed thread under its comm in one dump. Its own name in most dumps.
    named = dict.fromkeys(fixed, 0)
    churned = ok = 0
    for _ in range(25):
        r = pybpfprof("dump", "-p", pid, "--json")
        if r.returncode == EXIT_CORRUPT and "address not mapped" in r.stderr:
            continue
        assert r.returncode == 0, r.stderr
        ok += 1
        for t in json.loads(r.stdout)["threads"]:
            if t["tid"] in fixed:
                assert t["name"] in (fixed[t["tid"]], fixed_comm[t["tid"]]), t
                named[t["tid"]] += t["name"] == fixed[t["tid"]]
            elif t["name"].startswith("churn-"):
                assert t["name"][6:].isdigit(), t["name"]
                churned += 1
            else:
                assert t["name"] in ("", comm_or_empty(pid, t["tid"]), spawner_comm) or \
                    t["name"].startswith("python"), t
    assert ok >= 5 and churned > 0, (ok, churned)
    assert all(2 * k > ok for k in named.values()), (ok, named, fixed)
    assert proc.poll() is None


def comm_or_empty(pid, tid):
    try:
        return comm(pid, tid)
    except OSError:
        return ""
