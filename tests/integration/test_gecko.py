"""The Gecko profile format (-f gecko, .gecko.json), the Firefox Profiler's:
its tables decoded here back into stacks and counts per thread, its status
markers, and the file read by speedscope's own Firefox importer under node
(speedscope_import.js, as test_formats.py does for speedscope's format).

speedscope recognises a Gecko profile inside the envelope the old Firefox
DevTools performance panel exported ({"systemHost": {"name": "Firefox"},
"profile": ...}), and the Firefox Profiler opens both that envelope and the
bare profile pybpfprof writes; the test adds the envelope and nothing else.
speedscope's importer reads one thread (the only one) and only frames
written "name (file[:line])", weighing a sample by the time to the next.
"""

import collections
import json

import pytest
from conftest import pybpfprof


from test_formats import HZ, PROFILE, convert, node_cache, speedscope_import  # noqa: F401 (fixture)

INTERVAL = 1000.0 / HZ


def load(path):
    with open(path) as f:
        return json.load(f)


def col(table, name):
    return table["schema"][name]


def decode(thread):
    """{stack text root first: samples}, [(time, stack)] of a thread."""
    st, ft, strs = thread["stackTable"], thread["frameTable"], thread["stringTable"]
    loc = col(ft, "location")

    def frames(s):
        out = []
        while s is not None:
            prefix, frame = st["data"][s][col(st, "prefix")], st["data"][s][col(st, "frame")]
            out.append(strs[ft["data"][frame][loc]])
            s = prefix
        return ";".join(reversed(out))

    counts = collections.Counter()
    rows = []
    sm = thread["samples"]
    for row in sm["data"]:
        s, t = row[col(sm, "stack")], row[col(sm, "time")]
        rows.append((t, s))
        if s is not None:
            counts[frames(s)] += 1
    return counts, rows


def markers(thread):
    m = thread["markers"]
    return [(thread["stringTable"][r[col(m, "name")]], r[col(m, "startTime")], r[col(m, "endTime")],
             r[col(m, "data")]) for r in m["data"]]


def expected_per_thread(text):
    """PROFILE's lines by thread, the label frames a track replaces dropped."""
    out = collections.defaultdict(collections.Counter)
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        thread = next(f for f in frames if f.startswith("thread ")).split(" ", 2)[2]
        frames = [f for f in frames if not f.startswith(("thread ", "process "))]
        out[thread][";".join(frames)] += int(n)
    return out


def test_gecko_by_extension_and_name(tmp_path):
    doc = load(convert(tmp_path, ".gecko.json", "-F", HZ))
    assert doc["meta"]["version"] == 27 and doc["meta"]["interval"] == INTERVAL
    assert [c["name"] for c in doc["meta"]["categories"]] == ["Other", "Python", "Idle"]
    assert load(convert(tmp_path, ".json", "-f", "gecko"))["meta"]["version"] == 27
    # .json alone stays speedscope's
    assert "$schema" in load(convert(tmp_path, ".json"))


def test_gecko_tables_give_back_the_profile(tmp_path):
    doc = load(convert(tmp_path, ".gecko.json", "-F", HZ))
    want = expected_per_thread(PROFILE)
    assert [(t["name"], t["pid"], t["tid"]) for t in doc["threads"]] == [
        ("MainThread", 42, 100), ("worker", 42, 101)]
    for t in doc["threads"]:
        counts, rows = decode(t)
        assert counts == want[t["name"]], t["name"]
        # one row a sample, one interval apart from 0, and a null row closing the track
        n = sum(want[t["name"]].values())
        assert [r[0] for r in rows] == pytest.approx([i * INTERVAL for i in range(n + 1)])
        assert rows[-1][1] is None and t["unregisterTime"] == pytest.approx(n * INTERVAL)
        for f in t["frameTable"]["data"]:
            text = t["stringTable"][f[col(t["frameTable"], "location")]]
            line = f[col(t["frameTable"], "line")]
            assert (line is None) == (not text.endswith(")") or ":" not in text), (text, line)


def test_gecko_status_markers(tmp_path):
    doc = load(convert(tmp_path, ".gecko.json", "-F", HZ))
    main, worker = doc["threads"]
    # each status one stretch of its thread's track, as long as its samples
    assert [(n, s, e, d["status"], d["samples"]) for n, s, e, d in markers(main)] == [
        ("[running]", 0, pytest.approx(8 * INTERVAL), "running", 8),
        ("[gil wait]", pytest.approx(8 * INTERVAL), pytest.approx(12 * INTERVAL), "gil wait", 4)]
    assert [(n, d["samples"]) for n, s, e, d in markers(worker)] == [("[running]", 4), ("[sleeping]", 1)]
    assert all(d["type"] == "ThreadStatus" for t in doc["threads"] for *_, d in markers(t))
    assert [s["name"] for s in doc["meta"]["markerSchema"]] == ["ThreadStatus"]


ONE_THREAD = "\n".join(l for l in PROFILE.splitlines() if "thread 100 " in l) + "\n"


def test_gecko_imports_in_speedscope(tmp_path, node_cache):  # noqa: F811
    doc = load(convert(tmp_path, ".gecko.json", "-F", HZ, text=ONE_THREAD))
    wrapped = tmp_path / "firefox-devtools.json"
    wrapped.write_text(json.dumps({"systemHost": {"name": "Firefox"},
                                   "duration": doc["threads"][0]["unregisterTime"], "profile": doc}))
    res = speedscope_import(node_cache, str(wrapped))
    (prof,) = res["profiles"]
    assert prof["unit"] == "milliseconds"
    assert prof["totalWeight"] == pytest.approx(12 * INTERVAL)
    # speedscope keeps the frames that name a file: the status leaves go
    want = collections.Counter()
    for stack, n in expected_per_thread(ONE_THREAD)["MainThread"].items():
        want[";".join(f for f in stack.split(";") if not f.startswith("["))] += n * INTERVAL
    assert {k: pytest.approx(v) for k, v in prof["stacks"].items()} == dict(want)


@pytest.mark.one_version
def test_gecko_recorded_wall_profile_is_a_timeline(interp, start_target, tmp_path):
    """Recorded, the samples are at the times they were taken: a tick every
    interval on each thread over the run, a sleeping thread one long
    [sleeping] stretch, a spinning one [running] (or waiting for a CPU)."""
    proc, pid, ready = start_target(interp, "workers.py", "spinner", "sleeper")
    out = tmp_path / "wall.gecko.json"
    r = pybpfprof("-p", pid, "-m", "wall", "--status", "-F", 97, "-d", 2, "-o", out)
    proc.kill()
    proc.wait()
    assert r.returncode == 0, r.stderr
    doc = load(out)
    assert doc["meta"]["interval"] == pytest.approx(1000 / 97)
    assert doc["meta"]["misc"] == "samples at the times they were taken"
    tids = {t["kind"]: t["native_id"] for t in ready["threads"]}
    by_tid = {t["tid"]: t for t in doc["threads"]}
    # The sleeper wakes every 20 ms and, on a GIL build, waits for the GIL the
    # spinner holds: on a loaded machine that wait can be most of its time.
    for kind, want in (("spinner", {"running", "runnable"}), ("sleeper", {"sleeping", "gil wait"})):
        t = by_tid[tids[kind]]
        counts, rows = decode(t)
        times = [tm for tm, s in rows if s is not None]
        assert len(times) >= 100, (kind, len(times))
        assert times == sorted(times)
        # ticks one interval apart (a late tick now and then), over the 2 s run
        gaps = sorted(b - a for a, b in zip(times, times[1:]))
        assert gaps[len(gaps) // 2] == pytest.approx(1000 / 97, rel=0.2), (kind, gaps[len(gaps) // 2])
        assert 1500 < times[-1] - times[0] < 2600, (kind, times[0], times[-1])
        ms = markers(t)
        shares = collections.Counter()
        for name, start, end, d in ms:
            assert end > start and name == "[%s]" % d["status"]
            shares[d["status"]] += d["samples"]
        assert sum(shares.values()) == len(times)
        top = shares.most_common(1)[0][0]
        assert top in want, (kind, shares)
