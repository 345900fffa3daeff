"""The html page's other views of the known profile (test_html.py's): the
sandwich of a function (its callers drawn above, its callees below, merged
over every stack through it, a recursive stack counted once) and the
inverted, bottom-up graph whose roots are the leaf functions; both kept in
the URL fragment. Driven in headless Chromium as test_html.py does.
"""

import collections
import json
import os

from test_html import (KNOWN, KNOWN_TOTAL, artifact, assert_clean, big_profile, browser, convert,  # noqa: F401
                       frame, frames, known_diff, open_page, page)
from test_html_table import function_of


def tree(frame_list):
    """{(depth, function): samples} of the frames drawn, "all" left out."""
    got = collections.Counter()
    for f in frame_list:
        if f["depth"] > 0:
            got[(f["depth"], function_of(f["text"]) if f["depth"] == 1 else f["text"])] += f["samples"]
    return dict(got)


def click_row(page, name):
    page.eval("[...document.querySelectorAll('#fns-body tr')].find(tr => tr.firstChild.textContent === %r).click()" % name)


def press(page, button):
    page.eval("document.getElementById(%r).click()" % button)


def test_sandwich_of_a_known_function(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    click_row(page, "main (app.py)")
    press(page, "sandwich")
    assert page.eval("pbp.view()") == {"view": "sandwich", "sandwich": "main (app.py)"}
    assert tree(page.eval("pbp.callers()")) == {
        (1, "main (app.py)"): 80, (2, "<module> (app.py:10)"): 80,
        (3, "thread 100 MainThread"): 80, (4, "process 42 python3 app.py"): 80}
    assert tree(frames(page)) == {
        (1, "main (app.py)"): 80, (2, "compute (app.py:20)"): 50, (3, "[running]"): 50,
        (2, "wait_io (/usr/lib/python3.11/socket.py:700)"): 30, (3, "[sleeping]"): 30}
    assert page.eval("pbp.state()")["total"] == KNOWN_TOTAL      # the header still counts all
    assert page.eval("document.getElementById('fg-up').hidden") is False
    # the two roots meeting in the middle are named after the function, each once
    assert [f["label"] for f in page.eval("pbp.callers()") if f["depth"] == 0] == ["callers of main (app.py) (80 samples)"]
    assert [f["label"] for f in frames(page) if f["depth"] == 0] == ["callees of main (app.py) (80 samples)"]
    # the callers' canvas lights up as the search matches: <module>'s row (the middle one of five)
    up_pixel = ("Array.from(document.getElementById('fg-up').getContext('2d')"
                ".getImageData(Math.round(5 * devicePixelRatio), Math.round(18 * 2.5 * devicePixelRatio), 1, 1).data)")
    before = page.eval(up_pixel)
    page.type_into("#search", "<module>")
    assert page.eval(up_pixel) != before
    page.screenshot(artifact("html-sandwich.png"))
    press(page, "sandwich")                                        # again: back to the graph
    assert page.eval("pbp.view()")["view"] == "graph"
    assert [f["label"] for f in frames(page) if f["depth"] == 0] == ["all (%d samples)" % KNOWN_TOTAL]
    assert page.eval("document.getElementById('fg-up').hidden") is True
    assert_clean(page)


def test_sandwich_counts_recursion_once(tmp_path, page):  # noqa: F811
    """fib calls itself: 20 samples through it, not 20 + 20 + 10; a frame
    clicked picks the function as a row does."""
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    f = frame(page, "fib (fib.py:3)")
    page.click(f["cx"], f["cy"])
    press(page, "sandwich")
    assert page.eval("pbp.view()")["sandwich"] == "fib (fib.py)"
    assert tree(page.eval("pbp.callers()")) == {
        (1, "fib (fib.py)"): 20, (2, "thread 102 recurse"): 20, (3, "process 42 python3 app.py"): 20}
    assert tree(frames(page)) == {
        (1, "fib (fib.py)"): 20, (2, "fib (fib.py:4)"): 20, (3, "fib (fib.py:4)"): 10,
        (3, "[running]"): 10, (4, "[running]"): 10}
    page.screenshot(artifact("html-sandwich-recursive.png"))
    assert_clean(page)


def leaf_functions(text):
    """{innermost Python frame: samples} of collapsed stacks."""
    got = collections.Counter()
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        py = [f for f in stack.split(";") if not f.startswith(("thread ", "process ", "["))]
        got[py[-1]] += int(n)
    return dict(got)


def test_inverted_roots_are_leaf_functions(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    table = page.eval("pbp.table()")
    press(page, "invert")
    assert page.eval("pbp.view()")["view"] == "inverted"
    drawn = frames(page)
    roots = {f["text"]: f["samples"] for f in drawn if f["depth"] == 1}
    assert roots == leaf_functions(KNOWN)
    assert roots["compute (app.py:20)"] == 50 and roots["fib (fib.py:4)"] == 20
    assert page.eval("pbp.state()")["viewTotal"] == KNOWN_TOTAL
    # under a leaf, its callers: compute <- main <- <module> <- the thread
    under = [f["text"] for f in drawn if f["depth"] > 1 and f["x"] >= frame(page, "compute (app.py:20)")["x"]
             and f["x"] < frame(page, "compute (app.py:20)")["x"] + 1]
    assert under[:3] == ["main (app.py:5)", "<module> (app.py:10)", "thread 100 MainThread"]
    # each stack's status is kept, last: under the process label, as the graph's leaves
    leaves = collections.Counter()
    for f in drawn:
        if f["text"].startswith("[") and f["depth"] > 1:
            leaves[f["text"]] += f["samples"]
    assert leaves == status_totals(KNOWN)
    assert [f["text"] for f in drawn if f["x"] == frame(page, "compute (app.py:20)")["x"]][-2:] == [
        "process 42 python3 app.py", "[running]"]
    # so colouring by status works there: compute's chain ran, wait_io's slept
    page.eval("(() => { const s = document.getElementById('colour'); s.value = 'status';"
              " s.dispatchEvent(new Event('change')); })()")
    fills = {f["text"]: f["fill"] for f in frames(page)}
    assert fills["compute (app.py:20)"] == fills["[running]"] != fills["[sleeping]"]
    assert fills["wait_io (/usr/lib/python3.11/socket.py:700)"] == fills["[sleeping]"]
    # the table still counts the page's own stacks
    assert page.eval("pbp.table()") == table
    page.screenshot(artifact("html-inverted.png"))
    press(page, "invert")
    assert {f["text"] for f in frames(page) if f["depth"] == 1} == {"process 42 python3 app.py"}
    assert_clean(page)


def reopen(browser, url):  # noqa: F811
    second = browser.new_page()
    second.goto(url, timeout=30)
    second.wait_for("document.documentElement.dataset.rendered", 30)
    return second


def test_views_kept_in_the_fragment(tmp_path, browser):  # noqa: F811
    path = convert(tmp_path, "known", KNOWN, ".html")
    first = browser.new_page()
    open_page(first, path)
    click_row(first, "main (app.py)")
    first.eval("document.getElementById('sandwich').click()")
    sandwich_url, callees = first.eval("location.href"), tree(frames(first))
    first.eval("document.getElementById('invert').click()")
    inverted_url, inverted = first.eval("location.href"), tree(frames(first))
    first.close()
    assert "view=sandwich" in sandwich_url and "view=inverted" in inverted_url
    for url, view, want in ((sandwich_url, "sandwich", callees), (inverted_url, "inverted", inverted)):
        second = reopen(browser, url)
        try:
            assert second.eval("pbp.view()")["view"] == view
            assert tree(frames(second)) == want
            if view == "sandwich":
                assert second.eval("pbp.view()")["sandwich"] == "main (app.py)"
                assert tree(second.eval("pbp.callers()"))[(2, "<module> (app.py:10)")] == 80
            second.screenshot(artifact("html-%s-restored.png" % view))
            assert_clean(second)
        finally:
            second.close()


def status_totals(text):
    got = collections.Counter()
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        got[stack.split(";")[-1]] += int(n)
    return got


def untick(page, status):
    page.eval("(() => { const b = document.querySelector('#legend .item[data-status=\"%s\"] input');"
              " b.checked = false; b.dispatchEvent(new Event('change', { bubbles: true })); })()" % status)


def test_status_filter_removes_exactly_its_samples(tmp_path, browser):  # noqa: F811
    path = convert(tmp_path, "known", KNOWN, ".html")
    per = status_totals(KNOWN)
    page = browser.new_page()
    try:
        open_page(page, path)
        untick(page, "[sleeping]")
        assert page.eval("pbp.state()")["viewTotal"] == KNOWN_TOTAL - per["[sleeping]"]
        assert page.eval("document.getElementById('info-samples').textContent") == "samples 90 of 120"
        table = {r["name"]: r["total"] for r in page.eval("pbp.table()")}
        assert "[sleeping]" not in table and "wait_io (/usr/lib/python3.11/socket.py)" not in table
        assert table["[running]"] == per["[running]"] and table["main (app.py)"] == 50
        assert not any(f["text"] == "[sleeping]" for f in frames(page))
        untick(page, "[running]")
        want = KNOWN_TOTAL - per["[sleeping]"] - per["[running]"]
        assert page.eval("pbp.state()")["viewTotal"] == want
        press(page, "invert")                       # the inverted view is filtered too
        assert page.eval("pbp.state()")["viewTotal"] == want
        assert {f["text"] for f in frames(page) if f["depth"] == 1} == {
            "np_dot (/usr/lib/python3/dist-packages/numpy/core/multiarray.py:10)", "work (app.py:40)"}
        page.screenshot(artifact("html-status-filter.png"))
        url = page.eval("location.href")
        assert "hide=" in url
        assert_clean(page)
    finally:
        page.close()
    second = reopen(browser, url)
    try:
        assert second.eval("pbp.view()")["view"] == "inverted"
        assert second.eval("pbp.state()")["viewTotal"] == want
        ticked = second.eval("[...document.querySelectorAll('#legend input')].map(b => [b.parentNode.dataset.status, b.checked])")
        assert dict(ticked) == {"[running]": False, "[sleeping]": False, "[native, no GIL]": True, "[gil wait]": True}
        second.screenshot(artifact("html-status-filter-restored.png"))
        assert_clean(second)
    finally:
        second.close()


def test_views_of_50k_stacks(tmp_path, page):  # noqa: F811
    """The other views of test_html.py's 50,000-stack profile: built and
    drawn, their times reported (build/test-artifacts/html-50k-views.json), not asserted."""
    path = convert(tmp_path, "big", big_profile(), ".html")
    open_page(page, path, timeout=60)
    total = page.eval("pbp.state()")["total"]
    top = page.eval("pbp.table()")[0]["name"]
    took = {}
    for view, name in (("inverted", None), ("sandwich", top), ("graph", None)):
        took[view] = page.eval("(() => { const t = performance.now(); pbp.setView(%r%s);"
                               " return performance.now() - t; })()" % (view, ", %r" % name if name else ""))
        assert page.eval("pbp.view()")["view"] == view
        if view != "sandwich":
            assert page.eval("pbp.state()")["viewTotal"] == total
        else:
            page.screenshot(artifact("html-50k-sandwich.png"))
    report = {"bytes": os.path.getsize(path), "ms": {k: round(v, 1) for k, v in took.items()}, "sandwich_of": top}
    with open(artifact("html-50k-views.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(report)
    assert_clean(page)


def test_keyboard_navigation(tmp_path, page):  # noqa: F811
    open_page(page, convert(tmp_path, "known", KNOWN, ".html"))
    zoomed = lambda: page.eval("pbp.state()")["zoom"]  # noqa: E731
    page.key("ArrowDown")                             # the widest child of all
    assert zoomed() == "process 42 python3 app.py"
    for want in ("thread 100 MainThread", "<module> (app.py:10)", "main (app.py:5)", "compute (app.py:20)"):
        page.key("ArrowDown")
        assert zoomed() == want
    assert page.eval("pbp.selectedFunction()") == "compute (app.py)"
    page.key("ArrowRight")
    assert zoomed() == "wait_io (/usr/lib/python3.11/socket.py:700)"
    page.key("ArrowRight")                            # no sibling further right
    assert zoomed() == "wait_io (/usr/lib/python3.11/socket.py:700)"
    page.key("ArrowLeft")
    page.key("ArrowUp")
    assert zoomed() == "main (app.py:5)"
    page.screenshot(artifact("html-keyboard.png"))
    page.key("/")
    assert page.eval("document.activeElement.id") == "search"
    page.key("Escape")
    assert zoomed() == "all" and page.eval("document.activeElement.id") != "search"
    assert_clean(page)


def test_dark_theme_and_toggle(tmp_path, browser, page):  # noqa: F811
    path = convert(tmp_path, "known", KNOWN, ".html")
    page.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        open_page(page, path)
        assert page.eval("pbp.theme()") == "#17171c"
        # the canvas background follows: the gap between the first two rows of frames
        assert page.eval("Array.from(document.getElementById('fg').getContext('2d')"
                         ".getImageData(2, Math.floor(17.5 * devicePixelRatio), 1, 1).data).slice(0, 3)") == [23, 23, 28]
        page.screenshot(artifact("html-dark.png"))
        press(page, "theme")
        assert page.eval("pbp.theme()") == "#fff"
        page.screenshot(artifact("html-dark-toggled.png"))
        assert "theme=light" in page.eval("location.href")
        press(page, "theme")
        assert page.eval("pbp.theme()") == "#17171c"
        url = page.eval("location.href")
        assert "theme=dark" in url
        assert_clean(page)
    finally:
        page.call("Emulation.setEmulatedMedia", {"features": []})
    second = reopen(browser, url)               # a light system: the link keeps the page dark
    try:
        assert second.eval("pbp.theme()") == "#17171c"
        assert_clean(second)
    finally:
        second.close()


def test_sandwich_and_inverted_of_a_diff(tmp_path, page):  # noqa: F811
    """pybpfprof diff's page: a view keeps each frame's samples before and after."""
    open_page(page, known_diff(tmp_path))
    click_row(page, "main (app.py)")
    press(page, "sandwich")
    got = {f["text"]: (f["before"], f["after"]) for f in frames(page) if f["depth"] == 2}
    assert got == {"compute (app.py:20)": (50, 90), "wait_io (/usr/lib/python3.11/socket.py:700)": (30, 30)}
    assert frame(page, "compute (app.py:20)")["delta"] > 0
    press(page, "invert")
    roots = {f["text"]: (f["before"], f["after"]) for f in frames(page) if f["depth"] == 1}
    assert roots["compute (app.py:20)"] == (50, 90) and roots["fib (fib.py:4)"] == (20, 20)
    page.screenshot(artifact("html-diff-inverted.png"))
    assert_clean(page)
