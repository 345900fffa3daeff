"""families: which interpreters a test runs on (CONTRIBUTING, "Which
interpreters a test runs on"). conftest.py's pytest_generate_tests asks
`choose`; the names are re-exported there.

A suite may name the interpreters it is about (INTERPRETERS = [...]).
Otherwise a test runs on one interpreter of each layout family
(FAMILY_REPS): what it checks does not change between the versions of a
family. A test that reads what a layout gives is marked `every_version` and
runs on all; one that reads no layout at all (the CLI, files, exits, top's
screen, a writer) is marked `one_version` and runs on one (ONE_VERSION).
So does a parameter marked so (pytest.param(..., marks=...)): its items are
thinned to one interpreter's after collection (`thin`), while the test's
other parameters run on each family.

PBP_INTERPS, naming interpreters, runs the family tests on all of those and
a `one_version` test on the first of them that is there; PBP_ALL_FAMILIES=1
runs every test on every interpreter; PBP_ONE_FAMILY=1 runs every test not
marked `every_version` as if it were `one_version` (`make
integration-asan`: it looks for memory errors in the program's code paths,
and only what reads a layout takes another path on another interpreter)."""

import os

ALL_FAMILIES = os.environ.get("PBP_ALL_FAMILIES", "") not in ("", "0")
ONLY = [n.strip() for n in os.environ.get("PBP_INTERPS", "").split(",") if n.strip()]
ONE_FAMILY = os.environ.get("PBP_ONE_FAMILY", "") not in ("", "0")
# One interpreter per layout family, where a test runs unless it is marked
# `every_version`: the oldest (co_lnotab, no debug offsets), the PyFrameObject
# chain (3.8-3.10), 3.11's interpreter frames in a static binary, 3.12, 3.13
# and 3.14 (_Py_DebugOffsets), and the free-threaded 3.14t. FAMILY_OF names,
# for every other interpreter, the representative whose runs cover it.
FAMILY_REPS = {"3.6", "3.10", "3.11-debian-static", "3.12", "3.13", "3.14-sid-chroot",
               "3.14t-sid-chroot"}
FAMILY_OF = {"3.7": "3.6", "3.8": "3.10", "3.9": "3.10", "3.11": "3.11-debian-static",
             "3.13-sid-chroot": "3.13", "3.13-dbg-sid-chroot": "3.13",
             "3.14-dbg-sid-chroot": "3.14-sid-chroot"}
# Where a `one_version` test runs: a pyenv build (no chroot to start), with
# interpreter frames and the table's offsets.
ONE_VERSION = "3.12"


def choose(metafunc, interps, only):
    """The interpreters of `interps` (those found that run this module,
    already cut to PBP_INTERPS' `only`) that the test runs on."""
    own = getattr(metafunc.module, "INTERPRETERS", None)
    marked = metafunc.definition.get_closest_marker
    if own is not None:
        return [i for i in interps if i.name in own]
    if ALL_FAMILIES or marked("every_version"):
        return interps
    if marked("one_version") or ONE_FAMILY:
        return one_version(interps, only)
    if only:
        return interps
    return [i for i in interps if i.name in FAMILY_REPS]


def one_version(interps, only):
    """[the interpreter a `one_version` test runs on]: the first of those
    named in PBP_INTERPS, else ONE_VERSION, else the first family
    representative; one that is there before one that is not (which skips)."""
    prefer = only or [ONE_VERSION] + sorted(FAMILY_REPS)
    ranked = sorted((i for i in interps if i.name in prefer),
                    key=lambda i: (bool(i.skip_reason), prefer.index(i.name)))
    return ranked[:1]


def thin(items, only):
    """(kept, dropped): of the items a parameter marked `one_version` gave
    (the mark is the item's, not its function's), those of one interpreter
    for each set of the other parameters are kept (all, under
    PBP_ALL_FAMILIES=1)."""
    if ALL_FAMILIES:
        return items, []
    groups = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is not None and "interp" in spec.params and item.get_closest_marker("one_version"):
            others = tuple(sorted((k, repr(v)) for k, v in spec.params.items() if k != "interp"))
            groups.setdefault((item.module.__name__, item.originalname, others), []).append(item)
    dropped = set()
    for group in groups.values():
        chosen = one_version([i.callspec.params["interp"] for i in group], only)
        dropped.update(id(i) for i in group if i.callspec.params["interp"] not in chosen)
    return [i for i in items if id(i) not in dropped], [i for i in items if id(i) in dropped]


def unknown_names(known):
    """PBP_INTERPS's names that name no interpreter found or looked for (a
    typo would otherwise run no interpreter's tests and pass): one line."""
    wrong = [n for n in ONLY if n not in known]
    if wrong:
        return "PBP_INTERPS names %s, which is none of: %s" % (", ".join(wrong), ", ".join(known))
    return None
