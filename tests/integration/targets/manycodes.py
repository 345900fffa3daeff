"""Runs a new function after another, forever, each compiled from its own
file name: every sample is a stack the profile has not seen yet, so the
aggregate grows for as long as it samples (a fixed set of functions was
all seen within seconds, and what was left to grow then fitted the
profiler's heap in some runs).

Runs on CPython 3.6 to 3.14. Writes $PBP_READY {"pid", "version"} once the
first functions exist."""


from pbp_target import say_ready

i = 0


def fresh():
    global i
    ns = {}
    exec(compile("def f%d():\n    x = 0\n    for j in range(2000):\n        x += j\n" % i,
                 "gen%d.py" % i, "exec"), ns)
    i += 1
    return ns["f%d" % (i - 1)]


fresh()()
say_ready()
while True:
    fresh()()
