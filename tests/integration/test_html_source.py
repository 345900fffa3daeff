"""The html page's source heat: a recorded function selected shows its
file's lines, each with the samples it took (self and total), read from the
target's own root at the end of the run; a file over the page's per-file
budget, one deleted before the end and a converted profile say why there
are no lines. Target: targets/srcheat.py (known hot line, a 640 KiB module,
a deleted one), recorded once with -p and once as a launched command, in
wall mode (its threads sleep: their lines do not depend on the machine's
load). Driven in headless Chromium as test_html.py does.
"""

import os
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import TARGET_LIB, _discover, pybpfprof

from test_html import KNOWN, artifact, assert_clean, browser, convert, open_page, page  # noqa: F401
from test_html_views import click_row
from nulldev import null

# A chroot interpreter: its files are read under its own root, where the host has none of them.
INTERPRETERS = ["3.13", "3.14-sid-chroot"]

TARGET = os.path.join(os.path.dirname(__file__), "targets", "srcheat.py")


def line_of(marker):
    with open(TARGET) as f:
        return next(n for n, t in enumerate(f, 1) if "# " + marker in t)


HOT_LINE, CALL_LINE = line_of("HOT LINE"), line_of("CALL LINE")


def row_named(page, prefix):
    """The function table's row whose name starts with prefix."""
    rows = [r for r in page.eval("pbp.table()") if r["name"].startswith(prefix)]
    assert len(rows) == 1, (prefix, page.eval("pbp.table()"))
    return rows[0]


def source_of(page, prefix):
    row = row_named(page, prefix)
    click_row(page, row["name"])
    blocks = page.eval("pbp.source()")
    assert len(blocks) == 1, blocks
    return row, blocks[0]


def check_hot(page):
    """hot(): its sleep line takes most of its samples, the call line the
    rest (as total, not self); each line's counts add up to the table's."""
    row, hot = source_of(page, "hot (")
    assert hot["why"] is None, hot
    lines = {ln["line"]: ln for ln in hot["lines"]}
    assert "def hot(until):" in lines[min(lines)]["text"]        # from its def
    assert "# HOT LINE" in lines[HOT_LINE]["text"] and "# CALL LINE" in lines[CALL_LINE]["text"]
    total = row["total"]
    assert hot["total"] == total and total > 100, (hot["total"], row)
    assert sum(ln["total"] for ln in hot["lines"]) == total
    assert sum(ln["self"] for ln in hot["lines"]) == row["self"]
    # 3 ms asleep on HOT LINE, 1 ms in helper() from CALL LINE (wide bounds: a loaded machine)
    # its own time (time.sleep is C), but for a stack read while hot() called
    # helper(): the caller's line is saved at the call, a read just then may
    # see helper's frame under the line before (2 of 219 once, loaded)
    hot_line = lines[HOT_LINE]
    assert hot_line["total"] - max(2, 0.02 * hot_line["total"]) <= hot_line["self"] <= hot_line["total"], hot["lines"]
    assert hot_line["total"] > 0.5 * total, hot["lines"]
    assert lines[CALL_LINE]["total"] > 0.08 * total, hot["lines"]
    assert lines[CALL_LINE]["self"] <= 0.05 * total, hot["lines"]
    _, helper = source_of(page, "helper (")
    sampled = [ln for ln in helper["lines"] if ln["total"]]
    assert len(sampled) == 1 and "time.sleep(0.001)" in sampled[0]["text"], helper


def test_source_lines_of_a_recorded_target(interp, start_target, tmp_path, page):  # noqa: F811
    proc, pid, ready = start_target(interp, "srcheat.py")
    out = tmp_path / "src.html"
    r = pybpfprof("-p", pid, "-m", "wall", "-F", 199, "-d", 1.5, "-o", out)
    assert r.returncode == 0, r.stderr
    proc.kill()
    proc.wait()
    open_page(page, str(out))
    check_hot(page)
    source_of(page, "hot (")
    page.screenshot(artifact("html-source-%s.png" % interp.name), full_page=True)
    _, big = source_of(page, "big_wait (")
    assert big["why"].startswith("Source not shown: left out: 6") and "over the 512 KiB a file may take" in big["why"], big
    _, gone = source_of(page, "gone_wait (")
    assert gone["why"] == "Source not shown: No such file or directory.", gone
    page.screenshot(artifact("html-source-left-out-%s.png" % interp.name), full_page=True)
    # under a filter that leaves hot() out, its lines go too
    page.eval("(() => { const s = document.getElementById('filter');"
              " s.value = [...s.options].find(o => o.text.includes(' big')).value;"
              " s.dispatchEvent(new Event('change')); })()")
    click_row(page, row_named(page, "big_wait (")["name"])
    assert page.eval("pbp.source()")[0]["total"] == row_named(page, "big_wait (")["total"]
    assert_clean(page)


def test_source_lines_of_a_launched_command(interp, tmp_path, page):  # noqa: F811
    """The command has exited when the page is written: its files are read
    under the root held since it started."""
    host_dir, in_dir = interp.mkdtemp()
    out = tmp_path / "launched.html"
    r = pybpfprof("-m", "wall", "-F", 199, "-o", out, "-q", "--", *interp.cmd(interp.place(TARGET), 1.5),
                  env=dict(os.environ, PBP_READY=os.path.join(in_dir, "ready.json")), timeout=60)
    assert r.returncode == 0, r.stderr
    open_page(page, str(out))
    check_hot(page)
    assert_clean(page)


def test_converted_profile_has_no_source(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    click_row(page, "main (app.py)")
    blocks = page.eval("pbp.source()")
    assert [b["why"] for b in blocks] == [
        "Source not shown: this profile holds no source files: it was converted from collapsed "
        "stacks or pprof, which do not keep them."]
    page.screenshot(artifact("html-source-converted.png"))
    assert_clean(page)


def test_same_path_in_two_roots(tmp_path, page):  # noqa: F811
    """-a (narrowed by -p to two targets): one path, two processes, two roots
    holding different files there (the chroot's copy has a line more on top):
    one table row, and a block for each root, each with its own text and the
    samples of its own process at its own lines."""
    usable = {i.name: i for i in _discover() if not i.skip_reason}
    host, jail = usable.get(INTERPRETERS[0]), usable.get(INTERPRETERS[1])
    if not host or not jail or not jail.chrooted:
        pytest.skip("needs %s and the chroot's %s" % tuple(INTERPRETERS))
    where = "/tmp/pbp-src-%s" % uuid.uuid4().hex[:8]
    with open(TARGET) as f:
        code = f.read()
    procs = []
    try:
        for it, text in ((host, code), (jail, "# the chroot's copy\n" + code)):
            d = it.host_path(where)
            os.makedirs(d)
            os.chmod(d, 0o777)
            with open(os.path.join(d, "srcheat.py"), "w") as f:
                f.write(text)
            shutil.copy(TARGET_LIB, d)      # what srcheat.py imports
            procs.append((subprocess.Popen(it.cmd(where + "/srcheat.py"), stdin=null(),
                                           stdout=null(), stderr=null(),
                                           env=dict(os.environ, PBP_READY=where + "/ready.json")), d))
        for proc, d in procs:
            deadline = time.monotonic() + 30
            while not os.path.exists(os.path.join(d, "ready.json")):
                assert proc.poll() is None and time.monotonic() < deadline, "target not ready"
                time.sleep(0.05)
        out = tmp_path / "two.html"
        r = pybpfprof("-a", "-p", ",".join(str(p.pid) for p, _ in procs), "-m", "wall", "-F", 199,
                        "-d", 1.5, "-o", out)
        assert r.returncode == 0, r.stderr
    finally:
        for proc, d in procs:
            proc.kill()
            proc.wait()
        for it in (host, jail):
            shutil.rmtree(it.host_path(where), ignore_errors=True)
    open_page(page, str(out))
    row = row_named(page, "hot (")
    click_row(page, row["name"])
    blocks = page.eval("pbp.source()")
    assert len(blocks) == 2, blocks
    assert sorted(b["pids"][0] for b in blocks) == sorted(p.pid for p, _ in procs)
    assert sum(b["total"] for b in blocks) == row["total"]
    for b in blocks:
        lines = {ln["line"]: ln for ln in b["lines"]}
        shift = 1 if b["pids"][0] == procs[1][0].pid else 0      # the chroot's copy: a line lower
        assert "# HOT LINE" in lines[HOT_LINE + shift]["text"], b
        assert lines[HOT_LINE + shift]["self"] > 0.5 * b["total"], b
    page.screenshot(artifact("html-source-two-roots.png"), full_page=True)
    assert_clean(page)
