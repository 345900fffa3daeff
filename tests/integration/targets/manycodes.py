"""Runs a new function after another, forever, each compiled from its own
file name: every sample is a stack the profile has not seen yet, so the
aggregate grows for as long as it samples (a fixed set of functions was
all seen within seconds, and what was left to grow then fitted the
profiler's heap in some runs).

Names and file names are ~900 characters long, so that each sample of a
loaded machine (a few hundred a second) still asks a couple of KB more of
the profiler's heap than its slack holds. The last KEEP functions are kept
alive: one freed as soon as it returned
was often gone before a loaded profiler read its name, and every such
sample was the same [unknown] stack, which never grew the aggregate.

Runs on CPython 3.6 to 3.14. Writes $PBP_READY {"pid", "version"} once the
first functions exist."""

import collections

from pbp_target import say_ready

KEEP = 20000
kept = collections.deque(maxlen=KEEP)
i = 0


def fresh():
    global i
    ns = {}
    name = "f%d_%s" % (i, "x" * 900)
    exec(compile("def %s():\n    x = 0\n    for j in range(2000):\n        x += j\n" % name,
                 "gen%d_%s.py" % (i, "y" * 900), "exec"), ns)
    i += 1
    kept.append(ns[name])
    return kept[-1]


fresh()()
say_ready()
while True:
    fresh()()
