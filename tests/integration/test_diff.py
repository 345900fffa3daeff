"""pybpfprof diff: two recorded runs of one target whose hot function
changes between them (targets/hotswap.py), compared as collapsed stacks
with two counts and as the differential flame graph page (in headless
Chromium, through cdp.py as test_html.py does); and every bad input said
in one line with its documented exit code.
"""

import gzip
import json
import os

import pytest

import cdp
from conftest import pybpfprof
from profile import func_of
from test_html import artifact, assert_clean, browser, open_page, page  # noqa: F401 (fixtures)

EXIT_USAGE, EXIT_IO = 2, 10
HOT, COLD = 0.8, 0.2      # hotswap.py's split of its CPU between the two functions


def record(start_target, interp, tmp_path, hot, ext=".txt"):
    proc, pid, ready = start_target(interp, "hotswap.py", hot)
    out = tmp_path / (hot + ext)
    r = pybpfprof("-p", pid, "-F", 199, "-d", 2, "-o", out)
    assert r.returncode == 0, r.stderr
    proc.kill()
    proc.wait()
    return out


def shares(diff_text):
    """{function: (before share, after share)} from diff's collapsed form;
    a function counts once a stack, at its innermost place."""
    tot = [0.0, 0.0]
    per = {}
    for line in diff_text.splitlines():
        stack, b, a = line.rsplit(" ", 2)
        counts = (float(b), float(a))
        funcs = {func_of(f) for f in stack.split(";")}
        for k in (0, 1):
            tot[k] += counts[k]
        for fn in funcs:
            s = per.setdefault(fn, [0.0, 0.0])
            for k in (0, 1):
                s[k] += counts[k]
    return {fn: (s[0] / tot[0], s[1] / tot[1]) for fn, s in per.items()}, tot


@pytest.fixture
def runs(interp, start_target, tmp_path):
    return (record(start_target, interp, tmp_path, "alpha"),
            record(start_target, interp, tmp_path, "beta", ".pb.gz"))


@pytest.mark.one_version
def test_diff_collapsed_and_html(runs, tmp_path, page):  # noqa: F811
    before, after = runs
    r = pybpfprof("diff", before, after, "-f", "collapsed")
    assert r.returncode == 0, r.stderr
    by_fn, tot = shares(r.stdout)
    # normalised: BEFORE's counts are scaled to AFTER's total
    assert abs(tot[0] - tot[1]) < 0.01 * tot[1] + 1
    # beta grew from about 20 % to 80 %, alpha shrank as much (wide bounds: a busy machine)
    assert by_fn["beta"][1] - by_fn["beta"][0] > 0.35, by_fn
    assert by_fn["alpha"][1] - by_fn["alpha"][0] < -0.35, by_fn
    html = tmp_path / "diff.html"
    r = pybpfprof("diff", before, after, "-o", html)
    assert r.returncode == 0, r.stderr
    open_page(page, str(html))
    page.screenshot(artifact("diff.png"))
    drawn = {}
    for f in page.eval("pbp.frames()"):
        drawn.setdefault(func_of(f["text"]), []).append(f)
    # the grown function is red (hue 0), the shrunk one blue, with the collapsed form's delta
    want = by_fn["beta"][1] - by_fn["beta"][0]
    beta = max(drawn["beta"], key=lambda f: f["w"])
    assert beta["fill"].startswith("hsl(0,"), beta
    assert abs(sum(f["delta"] for f in drawn["beta"]) - want) < 0.02, (drawn["beta"], want)
    assert max(drawn["alpha"], key=lambda f: f["w"])["fill"].startswith("hsl(215,")
    # a function is a row per file: a chroot interpreter runs each run's own copy of the script
    change = {}
    for row in page.eval("pbp.table()"):
        change[func_of(row["name"])] = change.get(func_of(row["name"]), 0) + row["change"]
    assert abs(change["beta"] - want) < 0.02, change
    assert change["alpha"] < -0.35, change
    assert page.eval("document.querySelector('h1').textContent") == "pybpfprof differential flame graph"
    assert_clean(page)


TEXT = "main (a.py:1);f (a.py:2) 30\nmain (a.py:1);g (a.py:3) 10\n"


def test_diff_same_file_is_no_change(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text(TEXT)
    r = pybpfprof("diff", p, p)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "main (a.py:1);f (a.py:2) 30 30\nmain (a.py:1);g (a.py:3) 10 10\n"
    # gzipped collapsed reads the same
    gz = tmp_path / "p.txt.gz"
    gz.write_bytes(gzip.compress(TEXT.encode()))
    assert pybpfprof("diff", gz, p).stdout == r.stdout
    # ... and a .gz output is gzipped, as record and convert write it (it was plain)
    for name, head in (("d.txt.gz", "main (a.py:1)"), ("d.html.gz", "<!DOCTYPE html>")):
        out = tmp_path / name
        w = pybpfprof("diff", p, p, "-o", out)
        assert w.returncode == 0, w.stderr
        assert gzip.decompress(out.read_bytes()).decode().startswith(head), name


@pytest.mark.parametrize("case", ["missing", "directory", "garbage", "bad_line", "empty", "format", "one_arg"])
def test_diff_bad_inputs(tmp_path, case):
    good = tmp_path / "good.txt"
    good.write_text(TEXT)
    other = good
    if case == "missing":
        other, code, msg = tmp_path / "nope.txt", EXIT_IO, "cannot read %s: No such file" % (tmp_path / "nope.txt")
    elif case == "directory":
        other, code, msg = tmp_path, EXIT_IO, "cannot read %s: Is a directory" % tmp_path
    elif case == "garbage":
        other = tmp_path / "x.bin"
        other.write_bytes(b"\x0a\x00\xff\xfe" * 8)
        code, msg = EXIT_USAGE, "not a profile pybpfprof reads (collapsed stacks or pprof)"
    elif case == "bad_line":
        other = tmp_path / "x.txt"
        other.write_text("just words\n")
        code, msg = EXIT_USAGE, "x.txt:1: not a collapsed-stack line"
    elif case == "empty":
        other = tmp_path / "e.txt"
        other.write_text("")
        code, msg = EXIT_USAGE, "e.txt: no samples to compare"
    args = [good, other]
    if case == "format":
        args += ["-o", tmp_path / "d.svg"]
        code, msg = EXIT_USAGE, "diff writes html or collapsed, not svg"
    if case == "one_arg":
        args = [good]
        code, msg = EXIT_USAGE, "diff needs two profiles"
    r = pybpfprof("diff", *args, "-o", tmp_path / "out.txt") if case not in ("format",) else pybpfprof("diff", *args)
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert msg in lines[0], r.stderr
    if case != "one_arg":       # argp adds its "Try --help" line
        assert len(lines) == 1, r.stderr
    assert not (tmp_path / "out.txt").exists()


def test_convert_reads_pprof_back(tmp_path):
    """convert reads what diff reads: pprof, gzipped collapsed, as well as collapsed."""
    text = "main (a.py:1);f (a.py:2) 30\nmain (a.py:1);g (/usr/lib/x.py) 10\nbare 2\n"
    src = tmp_path / "p.txt"
    src.write_text(text)
    pb = tmp_path / "p.pb.gz"
    assert pybpfprof("convert", "-i", src, "-o", pb).returncode == 0
    r = pybpfprof("convert", "-i", pb, "-o", tmp_path / "back.txt")
    assert r.returncode == 0, r.stderr
    assert sorted((tmp_path / "back.txt").read_text().splitlines()) == sorted(text.splitlines())
    gz = tmp_path / "p.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    r = pybpfprof("convert", "-i", gz)
    assert r.returncode == 0 and sorted(r.stdout.splitlines()) == sorted(text.splitlines()), r.stderr
