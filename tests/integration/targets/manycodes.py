"""Runs 5,000 distinct functions in turn, forever: nearly every sample is a
stack the profile has not seen yet, so the aggregate grows while it samples.

Runs on CPython 3.6 to 3.14. Writes $PBP_READY {"pid", "version"} once the
functions exist."""


from pbp_target import say_ready

funcs = []
for i in range(5000):
    ns = {}
    exec(compile("def f%d():\n    x = 0\n    for j in range(2000):\n        x += j\n" % i,
                 "gen%d.py" % i, "exec"), ns)
    funcs.append(ns["f%d" % i])
say_ready()
while True:
    for f in funcs:
        f()
