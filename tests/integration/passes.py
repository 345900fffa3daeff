"""passes: which of make integration's two passes a test runs in, and the
order the parallel pass hands the test modules out in (docs/testing.md).

A test is `serial` (pytest.mark.serial) when it needs the machine to
itself (CONTRIBUTING, "Tests that run two at a time"). `serial_under_asan`
marks one that needs it only in `make integration-asan` (not tried
beside another test under ASan, whose reads are slower), where the plain
build passes beside another session's whole suite.

The test modules run largest first, so that the parallel pass ends
together on both workers.

`make integration` gives each test module whole to one of two workers
(`--dist loadfile`), in the order collected: a worker takes the next
module when it is nearly done with its own. In name order a large module
taken late (top, after its neighbours) left the other worker idle for the
minutes it ran. Handed out largest first, the last ones taken are the
smallest, and the workers finish within a small module of each other.

The seconds are each module's tests' own seconds in the parallel pass of
a whole run on this 2-CPU machine (`scripts/test-times.py --order
build/integration-parallel.xml` prints them as a table to paste here);
only their order matters, so they need refreshing when a module grows or
shrinks by much, not on every change. A module not listed (a new one) is
taken first: its size is unknown, and first is where a large one costs
nothing. `make integration-asan` runs other tests of fewer modules
(ASAN_SECONDS), told apart by PBP_SANITIZED."""

import os

import pytest

from binary import SANITIZED


def serial_under_asan(test):
    """The test, marked serial under ASan (PBP_SANITIZED) and not otherwise."""
    return pytest.mark.serial(test) if SANITIZED else test


# Tests' own seconds of each module in the parallel pass of make
# integration: main at 860ed36, a whole run beside another session's tests
# (build/integration-parallel.xml), with the serial pass's seconds of the
# tests that left it since (test_modes' gil contention, test_hostile's fork
# and exec, test_top's cpu mode); test_errors without an out-of-memory
# test's 60 s timeout that run.
PLAIN_SECONDS = {
    "test_hostile": 509, "test_modes": 285, "test_record": 186, "test_subprocesses": 175,
    "test_package": 164, "test_pidns": 136, "test_asyncio": 111, "test_lifetimes": 101,
    "test_top": 89, "test_agent": 48, "test_native": 47, "test_cli": 35,
    "test_threadnames": 34, "test_dump": 33, "test_agent_exposed": 27, "test_agent_names": 27,
    "test_privileges": 21, "test_html_views": 19, "test_html": 15, "test_labels": 14,
    "test_html_source": 14, "test_docs": 14, "test_native_ext": 13, "test_kernel": 10,
    "test_versions": 10, "test_errors": 9, "test_formats": 8, "test_harness": 8, "test_podman": 7,
    "test_diff": 7, "test_deploy": 5, "test_html_table": 5, "test_tlbc": 4, "test_output_files": 4,
    "test_gecko": 4, "test_fourspin": 3, "test_service": 0,
}

# The same for make integration-asan (build/integration-asan-parallel.xml):
# none yet (the run above stopped before it), so its modules keep the
# order they are collected in, as before.
ASAN_SECONDS = {
}


def module_of(item):
    """The item's module name, "test_top" for tests/integration/test_top.py::..."""
    return os.path.basename(item.nodeid.split("::", 1)[0])[:-len(".py")]


def largest_first(items):
    """items, their modules in falling order of seconds (unknown ones first),
    each module's items in the order they had: a stable sort, so that an
    INTERP_SCOPE module keeps its interpreters grouped."""
    seconds = ASAN_SECONDS if SANITIZED else PLAIN_SECONDS
    return sorted(items, key=lambda item: -seconds.get(module_of(item), float("inf")))
