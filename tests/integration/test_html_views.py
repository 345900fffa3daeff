"""The html page's other views of the known profile (test_html.py's): the
sandwich of a function (its callers drawn above, its callees below, merged
over every stack through it, a recursive stack counted once) and the
inverted, bottom-up graph whose roots are the leaf functions; both kept in
the URL fragment. Driven in headless Chromium as test_html.py does.
"""

import collections

from test_html import (KNOWN, KNOWN_TOTAL, artifact, assert_clean, browser, convert, frame,  # noqa: F401
                       frames, open_page, page)
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
    page.screenshot(artifact("html-sandwich.png"))
    press(page, "sandwich")                                        # again: back to the graph
    assert page.eval("pbp.view()")["view"] == "graph"
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
