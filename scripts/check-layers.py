#!/usr/bin/python3
"""The layering of user/ (run by `make test`): a stage includes only its own
headers and those of the stages it is allowed to use, the headers include
no cycle, no umbrella header comes back, and no file of the tree grows past the
size one sitting can read.

Stages, lowest first. Data flows kernel -> sample -> symbol -> aggregate ->
output; the calls go down this table: the collection loop (sample) names
samples through symbol, which counts into aggregate; output reads aggregates;
session runs one profiling run (targets, kernel events, the loop, its end)
over them; cli parses options and drives sessions."""
import glob
import os
import re
import subprocess
import sys

ALLOWED = {
    "core": set(),
    "proc": {"core"},
    "cpython": {"core", "proc"},
    "aggregate": {"core"},
    "read": {"core", "aggregate"},
    "symbol": {"core", "proc", "cpython", "aggregate"},
    "sample": {"core", "proc", "cpython", "aggregate", "symbol"},
    "output": {"core", "aggregate", "read"},
    "agent": {"core", "proc", "aggregate", "output"},
    "session": {"core", "proc", "cpython", "aggregate", "read", "symbol", "sample", "output"},
    "cli": {"core", "proc", "cpython", "aggregate", "read", "symbol", "sample", "output", "agent", "session"},
}
# A stage's insides, for its own files alone: what is above uses its functions.
PRIVATE = {"session/run.h"}
MAX_LINES = 800
INCLUDE = re.compile(r'^#include "(\w+)/(\w+\.h)"', re.M)


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bad = []
    graph = {}
    for path in sorted(glob.glob("user/*/*.[ch]")):
        stage = path.split("/")[1]
        if stage not in ALLOWED:
            bad.append("%s: folder %s is not a stage in scripts/check-layers.py" % (path, stage))
            continue
        text = open(path, encoding="utf-8").read()
        for folder, name in INCLUDE.findall(text):
            if folder != stage and folder not in ALLOWED[stage]:
                bad.append("%s: %s (a higher stage) includes %s/%s" % (path, stage, folder, name))
            elif folder != stage and folder + "/" + name in PRIVATE:
                bad.append("%s: includes %s/%s, the insides of %s: use %s's functions" % (path, folder, name, folder, folder))
            if path.endswith(".h"):
                graph.setdefault(path[5:], set()).add(folder + "/" + name)
    bad += too_long()
    if re.search(r'#include "pyprof\.h"', "".join(open(p).read() for p in glob.glob("user/*/*.[ch]"))):
        bad.append("an umbrella header is back: include each module's own header instead")
    bad += cycles(graph)
    for b in bad:
        print("check-layers: " + b, file=sys.stderr)
    if not bad:
        print("check-layers: %d stages, %d files, no layer crossed, no include cycle"
              % (len(ALLOWED), len(glob.glob("user/*/*.[ch]"))))
    return 1 if bad else 0


def too_long():
    """Every file of the tree (git's list) past MAX_LINES: sources, the BPF
    side, tests, scripts, docs and man pages alike. Not read: generated files,
    which live in a gen/ folder, and data (fuzzing corpora, test data, images)."""
    try:
        files = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ["cannot list the tree's files (git ls-files)"]
    bad = []
    for path in sorted(f.decode() for f in files.split(b"\0") if f):
        if "/gen/" in "/" + path or path.startswith(("tests/fuzz/corpus/", "tests/unit/data/")) \
                or not os.path.isfile(path):
            continue
        try:
            lines = open(path, encoding="utf-8").read().count("\n")
        except (UnicodeDecodeError, OSError):
            continue        # not text: an image
        if lines > MAX_LINES:
            bad.append("%s: %d lines (at most %d: split it by what it holds)" % (path, lines, MAX_LINES))
    return bad


def cycles(graph):
    """Every header include cycle, once each, by depth-first search."""
    found, state = [], {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append("include cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


if __name__ == "__main__":
    sys.exit(main())
