"""The output formats, each read back by the tool it is made for:
pprof by `go tool pprof`, speedscope by speedscope's own importer (under
node), pstats by Python's pstats. Profiles come from hand-made collapsed
stacks through `pybpfprof convert`, so every figure is known exactly.

Tools that are missing are skipped (failed under PBP_REQUIRE_ALL=1):
`go` from Debian's golang-go, node and npm for speedscope, which
scripts/speedscope-install.sh fetches from the npm registry into a cache
outside the repository (PBP_NODE_CACHE, default /var/cache/pybpfprof/node).
"""

import collections
import gzip
import io
import json
import marshal
import os
import pstats
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PYBPFPROF, REPO, REQUIRE_ALL, pybpfprof

HERE = os.path.dirname(os.path.abspath(__file__))
SPEEDSCOPE_INSTALL = os.path.join(REPO, "scripts", "speedscope-install.sh")
SPEEDSCOPE_IMPORT = os.path.join(HERE, "speedscope_import.js")
HZ = 100

# Two threads; recursion (b under b), mutual recursion (a under b under a),
# one function on several lines, labels on both ends, and a sample with no
# Python frame at all. 17 samples.
PROFILE = """\
process 42 python3 app.py;thread 100 MainThread;main (app.py:10);a (app.py:3);b (app.py:7);b (app.py:8);b (app.py:7);[running] 6
process 42 python3 app.py;thread 100 MainThread;main (app.py:10);a (app.py:3);b (app.py:7);[running] 2
process 42 python3 app.py;thread 100 MainThread;main (app.py:12);c (lib.py:20);a (app.py:5);[gil wait] 3
process 42 python3 app.py;thread 100 MainThread;main (app.py:12);[gil wait] 1
process 42 python3 app.py;thread 101 worker;run (w.py:5);b (app.py:9);a (app.py:4);b (app.py:7);[running] 4
process 42 python3 app.py;thread 101 worker;[sleeping] 1
"""
TOTAL = 17
PY_SAMPLES = 16         # samples with at least one Python frame
# Samples with the function innermost ("own") and anywhere, once ("total").
OWN = {"main": 1, "a": 3, "b": 12, "c": 0, "run": 0}
CUM = {"main": 12, "a": 15, "b": 12, "c": 3, "run": 4}
TOP_FUNCTION = "b"


def require(ok, why):
    if not ok:
        if REQUIRE_ALL:
            pytest.fail(why + " (PBP_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(why)


def convert(tmp_path, ext, *args, text=PROFILE):
    src = tmp_path / "in.txt"
    src.write_text(text)
    out = tmp_path / ("profile" + ext)
    r = pybpfprof("convert", "-i", src, "-o", out, "-F", HZ, *args)
    assert r.returncode == 0, r.stderr
    return str(out)


def collapsed_figures(text):
    """(total, own per function, cumulative per function) from collapsed text."""
    own, cum, total = collections.Counter(), collections.Counter(), 0
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        count = int(count)
        total += count
        funcs = [f.split(" (")[0] for f in stack.split(";") if f.endswith(")")]
        if funcs:
            own[funcs[-1]] += count
        for f in set(funcs):
            cum[f] += count
    return total, own, cum


def test_expected_figures_match_the_input():
    total, own, cum = collapsed_figures(PROFILE)
    assert total == TOTAL
    assert {f: own[f] for f in OWN} == OWN
    assert {f: cum[f] for f in CUM} == CUM


# --------------------------------------------------------------------- pprof

def go_pprof(*args):
    go = shutil.which("go") or "/usr/lib/go/bin/go"
    require(os.access(go, os.X_OK), "go not installed (Debian: golang-go)")
    env = dict(os.environ)
    # go wants a cache directory even for `go tool`; HOME may be unset under CI.
    env.setdefault("HOME", "/tmp")
    env.setdefault("GOCACHE", "/tmp/pybpfprof-gocache")
    r = subprocess.run([go, "tool", "pprof"] + list(args), capture_output=True,
                       universal_newlines=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def parse_top(text):
    """`pprof -top` rows -> {name: (flat, cum)}."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+?)\s*$", line)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows


def test_pprof_is_gzip(tmp_path):
    with open(convert(tmp_path, ".pb.gz"), "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    assert convert(tmp_path, ".pprof")  # the other extension works too


def test_pprof_top(tmp_path):
    path = convert(tmp_path, ".pb.gz")
    out = go_pprof("-top", "-sample_index=samples", path)
    assert "Type: samples" in out
    # The label-only sample has no location; pprof still counts it in the total.
    assert re.search(r"of %d total" % TOTAL, out), out
    top = parse_top(out)
    assert {f: top[f] for f in OWN} == {f: (OWN[f], CUM[f]) for f in OWN}, out
    first = [l for l in out.splitlines() if re.match(r"\s*\d+\s+[\d.]+%", l)][0]
    assert first.split()[-1] == TOP_FUNCTION


def test_pprof_time_values(tmp_path):
    """The second value is time: 10 ms a sample at 100 Hz, cpu for cpu and gil
    modes, wall for wall mode."""
    for mode, kind in (("cpu", "cpu"), ("gil", "cpu"), ("wall", "wall")):
        path = convert(tmp_path, ".pb.gz", "-m", mode)
        out = go_pprof("-raw", path)
        assert "PeriodType: %s nanoseconds" % kind in out
        assert "Period: 10000000" in out
        assert "samples/count %s/nanoseconds" % kind in out
        assert re.search(r"^\s+6\s+60000000: ", out, re.M), out


def test_pprof_lines_and_locations(tmp_path):
    out = go_pprof("-top", "-lines", "-sample_index=samples", convert(tmp_path, ".pb.gz"))
    top = parse_top(out)
    # own samples per line: b at line 7 in both threads, a at line 5 (under c)
    assert top["b app.py:7"][0] == 12
    assert top["a app.py:5"][0] == 3
    assert top["main app.py:12"][0] == 1
    assert top["main app.py:10"] == (0, 8)
    assert top["c lib.py:20"] == (0, 3)
    assert top["run w.py:5"] == (0, 4)
    assert top["b app.py:9"] == (0, 4)


def parse_raw_samples(raw):
    """`pprof -raw` samples -> [(count, [location ids], {label: value})]."""
    samples, cur = [], None
    section = raw.split("Samples:", 1)[1].split("Locations", 1)[0]
    for line in section.splitlines()[2:]:
        m = re.match(r"\s*(\d+)\s+(\d+):((?:\s+\d+)*)\s*$", line)
        if m:
            cur = (int(m.group(1)), [int(x) for x in m.group(3).split()], {})
            samples.append(cur)
        elif cur is not None and line.strip():
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                cur[2][k] = v
    return samples


def test_pprof_raw_samples_and_labels(tmp_path):
    raw = go_pprof("-raw", convert(tmp_path, ".pb.gz"))
    # "s=0()": the function's start line, unknown, and its system name, none
    locs = {int(m.group(1)): (m.group(2), m.group(3), int(m.group(4)))
            for m in re.finditer(r"^\s+(\d+): 0x0 M=\d+ (\S+) (\S+):(\d+) s=0\(\)$", raw, re.M)}
    samples = parse_raw_samples(raw)
    # -raw leaves out the sample without locations (test_pprof_wire finds it)
    assert sum(s[0] for s in samples) == PY_SAMPLES
    by_count = {s[0]: s for s in samples}
    count, ids, labels = by_count[6]
    # leaf first: b:7 b:8 b:7 a:3 main:10; no label frames among the locations
    assert [locs[i] for i in ids] == [("b", "app.py", 7), ("b", "app.py", 8), ("b", "app.py", 7),
                                      ("a", "app.py", 3), ("main", "app.py", 10)]
    assert labels == {"thread_id": "100", "thread_name": "MainThread", "status": "running",
                      "pid": "42", "process": "python3 app.py"}
    assert by_count[3][2]["status"] == "gil wait"
    assert by_count[4][2]["thread_name"] == "worker"
    assert by_count[4][2]["thread_id"] == "101"
    assert [locs[i] for i in by_count[4][1]][-1] == ("run", "w.py", 5)


def test_pprof_tags(tmp_path):
    """pprof groups by our labels (it leaves out the sample without locations)."""
    out = go_pprof("-tags", "-sample_index=samples", convert(tmp_path, ".pb.gz"))
    assert re.search(r"12(\.0)? \(\s*75\.00%\): MainThread", out), out
    assert re.search(r"4(\.0)? \(\s*25\.00%\): worker", out), out
    assert re.search(r"4(\.0)? \(\s*25\.00%\): gil wait", out), out
    assert re.search(r"12(\.0)? \(\s*75\.00%\): running", out), out


def varints(buf):
    """Protobuf wire format -> [(field, wire type, value)]; value is an int
    for varints, bytes for length-delimited fields."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if b < 0x80:
                return v
    while i < len(buf):
        key = varint()
        field, wt = key >> 3, key & 7
        if wt == 0:
            out.append((field, wt, varint()))
        elif wt == 2:
            n = varint()
            out.append((field, wt, buf[i:i + n]))
            i += n
        else:
            raise AssertionError("unexpected wire type %d" % wt)
    return out


def _unpack(b):
    """A packed repeated varint field."""
    vals, v, shift = [], 0, 0
    for c in b:
        v |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            vals.append(v)
            v = shift = 0
    return vals


def test_pprof_wire(tmp_path):
    """The message itself, decoded here: field numbers of profile.proto, the
    string table's empty first entry, and every sample, including the one
    without Python frames that `pprof -raw` does not print."""
    with gzip.open(convert(tmp_path, ".pb.gz")) as f:
        top = varints(f.read())
    strings = [v.decode() for f, _, v in top if f == 6]
    assert strings[0] == ""
    fields = {f for f, _, _ in top}
    assert fields >= {1, 2, 4, 5, 6, 11, 12}
    assert [v for f, _, v in top if f == 12] == [10000000]              # period
    samples = []
    for f, _, v in top:
        if f == 2:
            sub = varints(v)
            locs = [x for g, wt, b in sub if g == 1 for x in (_unpack(b) if wt == 2 else [b])]
            vals = [x for g, wt, b in sub if g == 2 for x in (_unpack(b) if wt == 2 else [b])]
            labels = {}
            for g, _, b in sub:
                if g == 3:
                    lab = dict((h, x) for h, _, x in varints(b))
                    labels[strings[lab[1]]] = strings[lab[2]] if 2 in lab else lab.get(3, 0)
            samples.append((locs, vals, labels))
    assert sum(v[0] for _, v, _ in samples) == TOTAL
    assert all(v[1] == v[0] * 10000000 for _, v, _ in samples)
    (sleeping,) = [s for s in samples if s[2].get("status") == "sleeping"]
    assert sleeping == ([], [1, 10000000], {"thread_id": 101, "thread_name": "worker",
                                            "status": "sleeping", "pid": 42,
                                            "process": "python3 app.py"})
    funcs = []
    for f, _, v in top:
        if f == 5:
            d = dict((g, x) for g, _, x in varints(v))
            funcs.append((strings[d[2]], strings[d.get(3, 0)], strings[d[4]], d.get(5, 0)))
    # No system name: Python has no mangled one (and pprof would "demangle" an equal one).
    assert sorted(funcs) == sorted([("main", "", "app.py", 0), ("a", "", "app.py", 0),
                                    ("b", "", "app.py", 0), ("c", "", "lib.py", 0),
                                    ("run", "", "w.py", 0)])


def test_pprof_python_names_kept(tmp_path):
    """Names pprof's C++ heuristics would cut (<...> looks like template
    arguments): shown as they are, not as <unknown>."""
    text = "<module> (app.py:1);<listcomp> (app.py:2);f.<locals>.<lambda> (app.py:3) 3\n"
    top = parse_top(go_pprof("-top", "-sample_index=samples", convert(tmp_path, ".pb.gz", text=text)))
    assert {f: top.get(f) for f in ("<module>", "<listcomp>", "f.<locals>.<lambda>")} == {
        "<module>": (0, 3), "<listcomp>": (0, 3), "f.<locals>.<lambda>": (3, 3)}, top


def test_pprof_without_labels(tmp_path):
    """Plain stacks (no thread, process or status frames): no labels at all."""
    path = convert(tmp_path, ".pb.gz", text="main (a.py:1);f (a.py:2) 3\nmain (a.py:1) 1\n")
    raw = go_pprof("-raw", path)
    samples = parse_raw_samples(raw)
    assert sorted(s[0] for s in samples) == [1, 3]
    assert all(s[2] == {} for s in samples)


# --------------------------------------------------------------------- speedscope

@pytest.fixture(scope="module")
def node_cache():
    require(shutil.which("node") and shutil.which("npm"), "node/npm not installed")
    r = subprocess.run([SPEEDSCOPE_INSTALL], capture_output=True, universal_newlines=True,
                       timeout=600)
    require(r.returncode == 0, "cannot install speedscope from npm: %s" % r.stderr.strip()[-500:])
    return r.stdout.strip()


def speedscope_import(node_cache, path):
    r = subprocess.run(["node", SPEEDSCOPE_IMPORT, node_cache, path], capture_output=True,
                       universal_newlines=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_speedscope_file(tmp_path):
    with open(convert(tmp_path, ".json")) as f:
        doc = json.load(f)
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert {"name": "b", "file": "app.py", "line": 8} in frames
    assert {"name": "[gil wait]"} in frames
    names = [p["name"] for p in doc["profiles"]]
    assert names == ["thread 100 MainThread", "thread 101 worker"]
    assert doc["activeProfileIndex"] == 0       # the busiest thread
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "seconds"
        assert len(p["samples"]) == len(p["weights"])
        # root first, thread label dropped (the profile is the thread)
        for s in p["samples"]:
            assert frames[s[0]]["name"].startswith("process 42")
            assert not any(frames[i]["name"].startswith("thread ") for i in s)


def test_speedscope_imports(tmp_path, node_cache):
    res = speedscope_import(node_cache, convert(tmp_path, ".json"))
    assert res["schemaErrors"] is None, res["schemaErrors"]
    assert res["indexToView"] == 0
    main, worker = res["profiles"]
    assert main["name"] == "thread 100 MainThread"
    assert worker["name"] == "thread 101 worker"
    assert main["unit"] == "seconds"
    assert round(main["totalWeight"] * HZ, 6) == 12
    assert round(worker["totalWeight"] * HZ, 6) == 5
    stacks = {k: round(v * HZ, 6) for k, v in main["stacks"].items()}
    assert stacks == {
        "process 42 python3 app.py;main (app.py:10);a (app.py:3);b (app.py:7);b (app.py:8);"
        "b (app.py:7);[running]": 6,
        "process 42 python3 app.py;main (app.py:10);a (app.py:3);b (app.py:7);[running]": 2,
        "process 42 python3 app.py;main (app.py:12);c (lib.py:20);a (app.py:5);[gil wait]": 3,
        "process 42 python3 app.py;main (app.py:12);[gil wait]": 1,
    }
    stacks = {k: round(v * HZ, 6) for k, v in worker["stacks"].items()}
    assert stacks == {
        "process 42 python3 app.py;run (w.py:5);b (app.py:9);a (app.py:4);b (app.py:7);[running]": 4,
        "process 42 python3 app.py;[sleeping]": 1,
    }


def test_speedscope_odd_names(tmp_path, node_cache):
    """Quotes, backslashes, control characters and invalid UTF-8 in names
    still make valid JSON."""
    text = ('main (we\\ird "dir"/a.py:1);f\x01 (a.py:2) 3\n'.encode() +
            b"g\xff\xfe (b.py:3) 2\n" + "h\u00e9\u4e2d (c.py:4) 1\n".encode())
    src = tmp_path / "odd.txt"
    src.write_bytes(text)
    out = tmp_path / "odd.speedscope.json"
    r = pybpfprof("convert", "-i", src, "-o", out)
    assert r.returncode == 0, r.stderr
    res = speedscope_import(node_cache, str(out))
    assert res["schemaErrors"] is None, res["schemaErrors"]
    (p,) = res["profiles"]
    assert p["name"] == "all threads"
    stacks = {k: round(v * 99, 6) for k, v in p["stacks"].items()}    # convert's default rate
    assert stacks == {'main (we\\ird "dir"/a.py:1);f\x01 (a.py:2)': 3,
                      "g\ufffd\ufffd (b.py:3)": 2,
                      "h\u00e9\u4e2d (c.py:4)": 1}


# --------------------------------------------------------------------- pstats

def s(n):
    return n / HZ


# key: (file, smallest line seen, name); value: (cc, nc, tt, ct, callers),
# callers: {key: (nc, cc, tt, ct)} -- cProfile's own orders.
MAIN, A, B, C, RUN = (("app.py", 10, "main"), ("app.py", 3, "a"), ("app.py", 7, "b"),
                      ("lib.py", 20, "c"), ("w.py", 5, "run"))
EXPECTED_PSTATS = {
    MAIN: (12, 12, s(1), s(12), {}),
    A: (15, 15, s(3), s(15), {MAIN: (8, 8, s(0), s(8)),
                              C: (3, 3, s(3), s(3)),
                              B: (4, 4, s(0), s(4))}),
    B: (12, 28, s(12), s(12), {A: (12, 12, s(6), s(12)),
                               B: (12, 6, s(6), s(6)),
                               RUN: (4, 4, s(0), s(4))}),
    C: (3, 3, s(0), s(3), {MAIN: (3, 3, s(0), s(3))}),
    RUN: (4, 4, s(0), s(4), {}),
}


def test_pstats_exact_figures(tmp_path):
    with open(convert(tmp_path, ".pstats"), "rb") as f:
        stats = marshal.load(f)
    assert stats == EXPECTED_PSTATS


def test_pstats_print_stats(tmp_path):
    st = pstats.Stats(convert(tmp_path, ".pstats"), stream=io.StringIO())
    assert st.total_calls == 62 and st.prim_calls == 46
    assert st.total_tt == pytest.approx(PY_SAMPLES / HZ)
    st.sort_stats("cumulative").print_stats()
    out = st.stream.getvalue()
    assert "62 function calls (46 primitive calls) in 0.160 seconds" in out
    rows = [l.split() for l in out.splitlines() if re.search(r"\.py:\d+\(", l)]
    assert rows[0] == ["15", "0.030", "0.002", "0.150", "0.010", "app.py:3(a)"]
    assert ["28/12", "0.120", "0.004", "0.120", "0.010", "app.py:7(b)"] in rows
    assert ["12", "0.010", "0.001", "0.120", "0.010", "app.py:10(main)"] in rows
    assert ["4", "0.000", "0.000", "0.040", "0.010", "w.py:5(run)"] in rows
    assert rows[-1] == ["3", "0.000", "0.000", "0.030", "0.010", "lib.py:20(c)"]
    st.stream = io.StringIO()
    st.print_callers("app.py:7")
    callers = st.stream.getvalue()
    assert re.search(r"12/6\s+0\.060\s+0\.060\s+app\.py:7\(b\)", callers), callers


def test_pstats_command_line(tmp_path):
    path = convert(tmp_path, ".pstats")
    r = subprocess.run([sys.executable, "-m", "pstats", path], input="sort tottime\nstats 1\nquit\n",
                       capture_output=True, universal_newlines=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "62 function calls (46 primitive calls) in 0.160 seconds" in r.stdout
    rows = [l.split() for l in r.stdout.splitlines() if re.search(r"\.py:\d+\(", l)]
    assert rows == [["28/12", "0.120", "0.004", "0.120", "0.010", "app.py:7(b)"]]


def test_pstats_big_counts_and_unicode(tmp_path):
    """Counts past 2**31 take marshal's long form; non-ASCII names its UTF-8 form."""
    big = 3 * 2 ** 31 + 5
    path = convert(tmp_path, ".pstats", text="m\u00e9 (\u4e2d.py:2);g (b.py:9) %d\n" % big)
    with open(path, "rb") as f:
        stats = marshal.load(f)
    key = ("\u4e2d.py", 2, "m\u00e9")
    assert stats[key] == (big, big, 0.0, big / HZ, {})
    assert stats[("b.py", 9, "g")] == (big, big, big / HZ, big / HZ, {key: (big, big, big / HZ, big / HZ)})


# --------------------------------------------------------------------- collapsed

def test_collapsed_round_trip(tmp_path):
    """Frames known by name only (no file) come back as they went in, and a
    line that appears twice, or two that read the same, become one line."""
    text = ("bare;g (b.py:1) 1\n[unknown];h (c.py:2) 2\n"
            "thread 7 x;bare;g (b.py:1) 4\nbare;g (b.py:1) 5\n")
    with open(convert(tmp_path, ".txt", text=text)) as f:
        assert f.read() == "bare;g (b.py:1) 6\n[unknown];h (c.py:2) 2\nthread 7 x;bare;g (b.py:1) 4\n"


def test_convert_crlf(tmp_path):
    """A file whose lines end in CR LF reads as the same file with LF."""
    with open(convert(tmp_path, ".txt", text="a;b (f.py:1) 2\r\nc 1\r\n")) as f:
        assert f.read() == "a;b (f.py:1) 2\nc 1\n"


DEEPEST = b";".join([b"f (a.py:1)"] * 16388)    # the most frames pybpfprof writes


@pytest.mark.parametrize("text,why", [
    (b"a;b\n", "it does not end in a space and a count"),
    (b"a;b -1\n", "it does not end in a space and a count"),
    (b"a;b 1x\n", "it does not end in a space and a count"),
    (b"a 4503599627370496\nb 4503599627370497\n", "its count takes the total over 2^53"),
    (b"a;b 99999999999999999999999\n", "its count takes the total over 2^53"),
    (b"a 1\n 2\n", "it has no frame"),
    (b"a 1\n   3\n", "it has no frame"),
    (b"a;;b 1\n", "it has an empty frame"),
    (b";;; 1\n", "it has an empty frame"),
    (b"a; 1\n", "it has an empty frame"),
    (b"a 1\nb\x00c 1\n", "it holds a NUL byte"),
    (DEEPEST + b" 1\n" + DEEPEST + b";g 1\n", "it has more than 16,388 frames"),
], ids=["no-count", "negative", "junk", "sum-over-2^53", "count-over-2^53", "no-frame", "blank-frame",
        "empty-frame", "empty-frames", "empty-last-frame", "nul", "too-deep"])
def test_convert_says_why(tmp_path, text, why):
    src = tmp_path / "bad.txt"
    src.write_bytes(text)
    r = pybpfprof("convert", "-i", src, "-o", tmp_path / "out.txt")
    line = text.count(b"\n")
    assert (r.returncode, r.stderr) == (2, "pybpfprof: %s:%d: not a collapsed-stack line: %s\n" % (
        src, line, why))
    assert not (tmp_path / "out.txt").exists()


def test_convert_line_too_long(tmp_path):
    """A line longer than 256 MiB is refused once that much is read."""
    p = subprocess.Popen([PYBPFPROF, "convert", "-o", str(tmp_path / "out.txt")],
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    chunk = b"x" * (1 << 20)
    try:
        p.stdin.write(b"a 1\n")
        for _ in range(257):
            p.stdin.write(chunk)
        p.stdin.close()
    except BrokenPipeError:
        pass
    err = p.stderr.read().decode()
    assert (p.wait(timeout=60), err) == (
        2, "pybpfprof: stdin:2: not a collapsed-stack line: it is longer than 256 MiB\n")


def many_stacks_gz(tmp_path):
    """20,000 stacks gzipped, as the issue that found the cut files read whole had them."""
    text = "".join("main (a.py:1);f%d (b.py:%d);g (c.py:3) %d\n" % (i, i, 89858 + i) for i in range(20000))
    gz = tmp_path / "many.txt.gz"
    gz.write_bytes(gzip.compress(text.encode(), mtime=0))
    return gz


@pytest.mark.parametrize("reader", ["convert", "diff"])
def test_damaged_gzip_refused(tmp_path, reader):
    """A gzip stream cut anywhere, or with bytes after its end, is damaged
    data (exit 10) for every reader, not a shorter profile: zlib's gzread
    took a cut stream as a short file and skipped bytes after the last
    member. A cut .pb.gz too (it used to read as "not a pprof profile")."""
    good = many_stacks_gz(tmp_path)
    data = good.read_bytes()
    (tmp_path / "p.txt").write_text(PROFILE)
    assert pybpfprof("convert", "-i", tmp_path / "p.txt", "-o", tmp_path / "p.pb.gz").returncode == 0
    pb = (tmp_path / "p.pb.gz").read_bytes()
    cases = [(data[:n], "truncated") for n in (2, 10, 2994, len(data) // 2, len(data) - 1)]
    cases += [(pb[:len(pb) // 2], "truncated"), (data + b"\n", "bytes after its end"),
              (data + pb[:1], "bytes after its end")]
    for i, (content, why) in enumerate(cases):
        bad = tmp_path / ("bad%d.gz" % i)
        bad.write_bytes(content)
        out = tmp_path / "out.txt"
        args = ("-i", bad, "-o", out) if reader == "convert" else (good, bad, "-o", out)
        r = pybpfprof(reader, *args)
        assert (r.returncode, r.stderr) == (
            10, "pybpfprof: cannot read %s: damaged gzip data (%s)\n" % (bad, why)), len(content)
        assert not out.exists()
    # two members are one gzip file (cat a.gz b.gz), read whole
    (tmp_path / "two.gz").write_bytes(data + data)
    r = pybpfprof("convert", "-i", tmp_path / "two.gz")
    assert r.returncode == 0, r.stderr
    assert sum(int(l.rsplit(" ", 1)[1]) for l in r.stdout.splitlines()) == 2 * sum(89858 + i for i in range(20000))


@pytest.mark.parametrize("reader", ["convert", "diff"])
def test_other_formats_named(tmp_path, reader):
    """pybpfprof's own outputs that keep no stacks to read back, pstats and
    random bytes are named, not taken for a collapsed file with a bad first
    line (or one holding a NUL)."""
    src = tmp_path / "p.txt"
    src.write_text(PROFILE)
    cases = {".speedscope.json": "speedscope JSON", ".gecko.json": "a Gecko profile (JSON)",
             ".html": "an HTML page", ".svg": "an SVG image", ".pstats": "Python pstats (marshal)",
             ".html.gz": "an HTML page", ".txt.gz.gz": "gzipped twice"}
    for ext, what in cases.items():
        made = tmp_path / ("made" + ext)
        if ext == ".txt.gz.gz":
            made.write_bytes(gzip.compress(gzip.compress(PROFILE.encode())))
        else:
            assert pybpfprof("convert", "-i", src, "-o", made).returncode == 0
    (tmp_path / "made.bin").write_bytes(bytes((i * 7919 >> 3) & 0xff for i in range(512)))
    cases[".bin"] = "binary data"
    # diff -f collapsed's STACK BEFORE AFTER was read as stacks: a frame "b 6.67", exit 0.
    after = tmp_path / "after.txt"
    after.write_text(PROFILE.replace("[running] 6", "[running] 9"))
    assert pybpfprof("diff", src, after, "-f", "collapsed", "-o", tmp_path / "made.diff").returncode == 0
    cases[".diff"] = "a differential profile (diff -f collapsed: STACK BEFORE AFTER)"
    for ext, what in cases.items():
        made = tmp_path / ("made" + ext)
        args = ("-i", made) if reader == "convert" else (src, made)
        r = pybpfprof(reader, *args, "-o", tmp_path / "out.txt")
        assert (r.returncode, r.stderr) == (2, "pybpfprof: %s: not a profile pybpfprof reads "
                                               "(collapsed stacks or pprof): it is %s\n" % (made, what))
        assert not (tmp_path / "out.txt").exists()


def test_convert_directory(tmp_path):
    """A directory is not a file to read: said so, exit code 10 (not an empty profile)."""
    r = pybpfprof("convert", "-i", tmp_path, "-o", tmp_path / "out.txt")
    assert (r.returncode, r.stderr) == (10, "pybpfprof: cannot read %s: Is a directory\n" % tmp_path)
    assert not (tmp_path / "out.txt").exists()


# --------------------------------------------------------------------- all formats

def test_formats_agree(tmp_path, node_cache):
    """Same input, every format: the same sample total and top function."""
    with open(convert(tmp_path, ".txt")) as f:
        total, own, _ = collapsed_figures(f.read())
    assert (total, own.most_common(1)[0][0]) == (TOTAL, TOP_FUNCTION)

    out = go_pprof("-top", "-sample_index=samples", convert(tmp_path, ".pb.gz"))
    assert re.search(r"of %d total" % TOTAL, out)
    first = [l for l in out.splitlines() if re.match(r"\s*\d+\s+[\d.]+%", l)][0]
    assert first.split()[-1] == TOP_FUNCTION

    res = speedscope_import(node_cache, convert(tmp_path, ".json"))
    assert round(sum(p["totalWeight"] for p in res["profiles"]) * HZ, 6) == TOTAL
    ss_own = collections.Counter()
    for p in res["profiles"]:
        for stack, w in p["stacks"].items():
            funcs = [f.split(" (")[0] for f in stack.split(";") if f.endswith(")")]
            if funcs:
                ss_own[funcs[-1]] += w
    assert ss_own.most_common(1)[0][0] == TOP_FUNCTION

    # pstats has functions only: a sample without a Python frame has no
    # function to be charged to, so its total is the Python samples'.
    st = pstats.Stats(convert(tmp_path, ".pstats"), stream=io.StringIO())
    assert round(st.total_tt * HZ, 6) == PY_SAMPLES
    assert max(st.stats, key=lambda k: st.stats[k][2])[2] == TOP_FUNCTION
