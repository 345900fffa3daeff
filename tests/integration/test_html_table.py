"""The html page's function table (beside the graph in a wide window): own
and total samples per function (name and file) with recursion counted once,
sorting by a column, narrowing by the search, and selection both ways: a
row lights up its function's frames, a frame selects its row. Driven in
headless Chromium as test_html.py does, on the same known profile.
"""

import collections
import marshal

from test_html import (KNOWN, KNOWN_TOTAL, artifact, assert_clean, browser, convert, frame,  # noqa: F401
                       frames, known_diff, open_page, page)


def function_of(frame_text):
    """"name (file:line)" -> "name (file)"; labels stay as they are."""
    if frame_text.endswith(")") and " (" in frame_text:
        name, _, rest = frame_text.rpartition(" (")
        return "%s (%s)" % (name, rest[:-1].rsplit(":", 1)[0])
    return frame_text


def expected_table(text):
    """{function: (self, total)} of collapsed stacks, thread and process labels
    left out; self is the innermost Python frame's (a status's only in a stack
    without one)."""
    own, tot = collections.Counter(), collections.Counter()
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        funcs = [function_of(f) for f in stack.split(";") if not f.startswith(("thread ", "process "))]
        py = [f for f in funcs if not f.startswith("[")]
        own[(py or funcs)[-1]] += int(n)
        for fn in set(funcs):
            tot[fn] += int(n)
    return {fn: (own[fn], tot[fn]) for fn in tot}


def rows(page):
    return page.eval("pbp.table()")


def hl(page):
    return page.eval("getComputedStyle(document.documentElement).getPropertyValue('--hl').trim()")


def test_table_figures_and_layout(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    got = {r["name"]: (r["self"], r["total"]) for r in rows(page)}
    want = expected_table(KNOWN)
    assert got == want
    assert got["fib (fib.py)"] == (20, 20)         # fib under fib: once; its [running] leaf takes no self
    assert got["[sleeping]"] == (0, 30)
    # own first, the largest first
    selfs = [r["self"] for r in rows(page)]
    assert selfs == sorted(selfs, reverse=True)
    cell = page.eval("document.querySelector('#fns-body tr td:nth-child(3)').textContent")
    assert cell.endswith("%)") and cell.split(" ")[0].isdigit()
    # beside the graph at 1280 px: the table starts right of the canvas, level with it
    box = page.eval("(() => { const c = document.getElementById('fg').getBoundingClientRect(),"
                    " t = document.getElementById('fns').getBoundingClientRect();"
                    " return [c.right, c.top, t.left, t.top]; })()")
    assert box[2] >= box[0] - 1 and abs(box[3] - box[1]) < 60, box
    page.screenshot(artifact("html-table.png"))
    assert_clean(page)


# A thread without Python frames: its status is its only function.
IDLE = "process 42 python3 app.py;thread 103 idle;[sleeping] 7\n"


def test_table_self_is_pstats_tottime(tmp_path, page):  # noqa: F811
    """With --status every stack ends in a status: the table's self must still
    be the innermost Python frame's, as pstats' tottime (and the summary, pprof,
    the inverted view) count it, not the status leaf's."""
    text = KNOWN + IDLE
    with open(convert(tmp_path, "st", text, ".pstats", "-F", "50"), "rb") as f:
        tottime = {"%s (%s)" % (name, file): round(tt * 50, 6) for (file, _, name), (_, _, tt, _, _)
                   in marshal.load(f).items()}
    open_page(page, convert(tmp_path, "st", text, ".html", "-F", "50"))
    got = {r["name"]: r["self"] for r in rows(page)}
    assert {n: v for n, v in got.items() if not n.startswith("[")} == tottime
    assert tottime["fib (fib.py)"] == 20 and tottime["compute (app.py)"] == 50
    # statuses: self only where no Python frame is; the table's self sums to every sample
    assert {n: v for n, v in got.items() if n.startswith("[")} == {
        "[running]": 0, "[sleeping]": 7, "[native, no GIL]": 0, "[gil wait]": 0}
    assert sum(got.values()) == KNOWN_TOTAL + 7
    # the inverted view's roots (leaf functions) agree with the table's self
    page.eval("pbp.setView('inverted')")
    roots = {f["text"]: f["samples"] for f in frames(page) if f["depth"] == 1}
    assert {function_of(t): n for t, n in roots.items()} == {n: v for n, v in got.items() if v}
    assert_clean(page)


def test_diff_table_names_keep_the_width(tmp_path, page):  # noqa: F811
    """pybpfprof diff's table beside the graph (1280 px): three share columns
    narrow enough that the names keep most of the width, a 24-character name whole."""
    open_page(page, known_diff(tmp_path))
    widths = page.eval("[...document.querySelectorAll('#fns-head th')].map(t => t.getBoundingClientRect().width)")
    assert widths[0] >= 0.4 * sum(widths), widths
    cut = page.eval("[...document.querySelectorAll('#fns-body td:first-child')]"
                    ".filter(t => t.textContent.length <= 24 && t.scrollWidth > t.clientWidth).map(t => t.textContent)")
    assert cut == [], (cut, widths)
    # the numbers still fit their columns, the headings with their sort mark
    assert page.eval("[...document.querySelectorAll('#fns th, #fns td:not(:first-child)')]"
                     ".every(t => t.scrollWidth <= t.clientWidth)"), widths
    assert_clean(page)


def test_table_sort_and_search(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    page.click_selector("#fns-head th[data-key=total]")
    totals = [r["total"] for r in rows(page)]
    assert totals == sorted(totals, reverse=True)
    page.click_selector("#fns-head th[data-key=total]")
    assert [r["total"] for r in rows(page)] == sorted(totals)
    page.click_selector("#fns-head th[data-key=name]")
    names = [r["name"] for r in rows(page)]
    assert names == sorted(names, key=lambda s: s.lower()) or len(names) == len(set(names))
    page.type_into("#search", "fib")
    assert [r["name"] for r in rows(page)] == ["fib (fib.py)"]
    page.eval("document.getElementById('search').value = ''")
    page.type_into("#search", "/^w/")
    assert sorted(r["name"] for r in rows(page)) == [
        "wait_io (/usr/lib/python3.11/socket.py)", "work (app.py)"]
    assert_clean(page)


def test_table_selection_both_ways(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    colour = hl(page)
    # a row: every frame of its function lights up, no other
    page.click_selector("#fns-body tr[data-f='%d']" % next(
        r["f"] for r in rows(page) if r["name"] == "fib (fib.py)"))
    lit = sorted(f["text"] for f in frames(page) if f["fill"] == colour)
    assert lit == ["fib (fib.py:3)", "fib (fib.py:4)", "fib (fib.py:4)"]
    assert page.eval("pbp.selectedFunction()") == "fib (fib.py)"
    page.screenshot(artifact("html-table-selected.png"))
    # the same row again: nothing selected
    page.click_selector("#fns-body tr.sel")
    assert page.eval("pbp.selectedFunction()") is None
    assert not [f for f in frames(page) if f["fill"] == colour]
    # a frame: its row selected (and it zooms, as before)
    f = frame(page, "work (app.py:40)")
    page.click(f["cx"], f["cy"])
    assert page.eval("pbp.selectedFunction()") == "work (app.py)"
    sel = page.eval("[...document.querySelectorAll('#fns-body tr.sel')].map(t => t.firstChild.textContent)")
    assert sel == ["work (app.py)"]
    assert page.eval("pbp.state()")["zoom"] == "work (app.py:40)"
    assert_clean(page)


def test_view_kept_in_the_fragment(tmp_path, browser):  # noqa: F811
    """Filter, search, zoom and the selected function go to the URL fragment;
    a page opened with that URL (a shared link, a reload) shows the same view."""
    path = convert(tmp_path, "known", KNOWN, ".html")
    first = browser.new_page()
    open_page(first, path)
    g = first.eval("[...document.getElementById('filter').options].find(o => o.text.startsWith('thread 101')).value")
    first.eval("(() => { const s = document.getElementById('filter'); s.value = %r;"
               " s.dispatchEvent(new Event('change')); })()" % g)
    first.type_into("#search", "np_dot")
    f = frame(first, "work (app.py:40)")
    first.click(f["cx"], f["cy"])
    want = first.eval("pbp.state()")
    url = first.eval("location.href")
    assert "#" in url and "zoom=" in url and "fn=" in url
    first.close()
    second = browser.new_page()
    try:
        second.goto(url, timeout=30)
        second.wait_for("document.documentElement.dataset.rendered", 30)
        got = second.eval("pbp.state()")
        for k in ("zoom", "zoomTotal", "viewTotal", "matched", "filter"):
            assert got[k] == want[k], (k, got[k], want[k])
        assert got["zoom"] == "work (app.py:40)" and got["filter"] == g
        assert second.eval("pbp.selectedFunction()") == "work (app.py)"
        assert second.eval("document.getElementById('search').value") == "np_dot"
        second.screenshot(artifact("html-fragment-restored.png"))
        assert_clean(second)
    finally:
        second.close()
