"""page: the html report of a 50,000-stack profile, opened in headless
Chromium. Not per interpreter: the page is written by `pybpfprof convert`
from tests/integration/bigprofile.py's profile (3 processes, 24 threads,
3000 functions, depth 3-60), then opened REPS times, each in a new tab, and
timed by the page itself (pbp.timings: ms from navigation start to the first
painted frame, and to the JSON parsed and the tree built); then, in the last
tab, the inverted and sandwich views are switched to and timed. The file's
size is compared with the page the same profile made before issue #23's
report (bigprofile.BEFORE_23_BYTES, measured once from that tree)."""

import os
import subprocess
import sys
import time

from common import PBP, REPO, Figure, log

sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import cdp  # noqa: E402 (tests/integration, standard library only)
from bigprofile import BEFORE_23_BYTES, BEFORE_23_TREE, big_profile  # noqa: E402

N_STACKS = 50000


def convert(b):
    txt = os.path.join(b.tmp, "big50k.txt")
    html = os.path.join(b.tmp, "big50k.html")
    text = big_profile(N_STACKS)
    with open(txt, "w") as f:
        f.write(text)
    t = time.monotonic()
    r = subprocess.run([PBP, "convert", "-i", txt, "-o", html], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("convert failed: %s" % r.stderr)
    return html, len(text), time.monotonic() - t


def open_once(browser, url):
    p = browser.new_page()
    p.goto(url, timeout=120)
    p.wait_for("document.documentElement.dataset.rendered", 120)
    return p, p.eval("pbp.timings")


def switch_ms(p, button):
    """A view switched: ms from the click to the next painted frame."""
    return p.eval("new Promise(ok => { const t = performance.now(); document.getElementById(%r).click();"
                  " requestAnimationFrame(() => setTimeout(() => ok(performance.now() - t), 0)); })" % button)


def page(b):
    exe = cdp.find_chromium()
    if not exe:
        log("page: no Chromium (apt-get install chromium): not measured")
        return
    html, collapsed_bytes, convert_s = convert(b)
    size = os.path.getsize(html)
    painted, parsed, built, inverted, sandwich = [], [], [], [], []
    browser = cdp.Browser.start(exe)
    try:
        for rep in range(b.cfg["page_reps"] + 1):
            p, t = open_once(browser, "file://" + html)
            if rep:                 # the first open warms Chromium up: not counted
                painted.append(t["painted"])
                parsed.append(t["parsed"] - t["start"])
                built.append(t["built"] - t["parsed"])
            if rep == b.cfg["page_reps"]:
                p.eval("pbp.selectFunction(pbp.table()[0].name)")
                inverted.append(switch_ms(p, "invert"))
                switch_ms(p, "invert")
                sandwich.append(switch_ms(p, "sandwich"))
            p.close()
    finally:
        browser.close()
    b.page_figs = [
        Figure("page_open_ms", "50,000-stack page: open to first paint", "ms", painted, "%.0f"),
        Figure("page_parse_ms", "its JSON parsed", "ms", parsed, "%.0f"),
        Figure("page_build_ms", "its call tree built", "ms", built, "%.0f"),
        Figure("page_inverted_ms", "inverted view switched to, to paint", "ms", inverted, "%.0f"),
        Figure("page_sandwich_ms", "sandwich of the top function, to paint", "ms", sandwich, "%.0f"),
        Figure("page_mb", "its file", "MB", [size / 1e6], "%.2f"),
        Figure("page_size_ratio", "its file / before #23's (%s bytes, tree %s)" % (
            "{:,}".format(BEFORE_23_BYTES), BEFORE_23_TREE), "x", [size / BEFORE_23_BYTES], "%.3f"),
        Figure("page_vs_collapsed", "its file / the collapsed text", "x", [size / collapsed_bytes], "%.3f"),
    ]
    log("page: %d bytes, convert %.1f s, painted %s ms" % (size, convert_s, ", ".join("%.0f" % x for x in painted)))
