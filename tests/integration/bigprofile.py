"""The 50,000-stack profile the html page is tried on: test_html and
test_html_views open it in headless Chromium, and `make bench` (scripts/bench,
page scenario) times it there. Standard library only (the bench imports it)."""

import random

# The page big_profile() made before issue #23's report (tree e45ce4b, the
# first parent of its first merge, aa361a4: its own `convert`): the report's
# budget is 1.5 times this.
BEFORE_23_BYTES = 4180710
BEFORE_23_TREE = "e45ce4b"
SIZE_BUDGET = 1.5


def big_profile(n_stacks=50000, seed=7):
    """Distinct stacks from a random call graph: 3 processes, 24 threads,
    3000 functions in 300 files (app, stdlib, site-packages), depth 3-60."""
    rng = random.Random(seed)
    files = (["/srv/app/mod%d.py" % i for i in range(150)]
             + ["/usr/lib/python3.11/lib%d.py" % i for i in range(80)]
             + ["/usr/lib/python3/dist-packages/pkg%d/m%d.py" % (i % 20, i) for i in range(70)])
    funcs = ["f%d_%s (%s:%d)" % (i, "x" * (i % 17), rng.choice(files), rng.randint(1, 3000))
             for i in range(3000)]
    calls = [rng.sample(range(3000), 4) for _ in range(3000)]
    statuses = ["[running]", "[gil wait]", "[sleeping]", "[native, no GIL]", "[runnable]"]
    roots = ["process %d python3 srv%d.py;thread %d worker-%d" % (100 + t % 3, t % 3, 1000 + t, t)
             for t in range(24)]
    seen, lines = set(), []
    while len(lines) < n_stacks:
        f, frames_ = rng.randrange(40), []
        for _ in range(rng.randint(3, 60)):
            frames_.append(funcs[f])
            f = rng.choice(calls[f])
        stack = ";".join([rng.choice(roots)] + frames_ + [rng.choice(statuses)])
        if stack not in seen:
            seen.add(stack)
            lines.append("%s %d" % (stack, rng.randint(1, 40)))
    return "\n".join(lines) + "\n"
