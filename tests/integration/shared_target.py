"""shared_target: start_target's targets, started once per module for the
tests that only read them. Fixture and hook, imported into conftest.py
(where pytest looks for them)."""

import pytest

from conftest import TargetStarter


@pytest.fixture(scope="module")
def shared_target():
    """shared_target(interp, script, *args, **kwargs) -> (Popen, pid, ready):
    start_target's target, started once per module for every test that only
    reads it (record, dump, top against it), keyed by interpreter, script,
    arguments and options. The targets live while consecutive tests use
    the fixture: the first call for another interpreter stops them, and so
    does a next test that does not use it (pytest_runtest_teardown): a
    spinner kept on would take CPU from every later test of the module. A
    module that uses it sets INTERP_SCOPE = "module", which runs one
    interpreter's tests at a time. A test that changes its target
    (signals, kills, a fork or exec) starts its own with start_target."""
    starter, made = TargetStarter(), {}

    def get(interp, script, *args, **kwargs):
        key = (interp.name, script, args, repr(sorted(kwargs.items())))
        if any(k[0] != interp.name for k in made):
            starter.stop_all()
            made.clear()
        if key in made and made[key][0].poll() is not None:
            pytest.fail("shared target %s %s on %s ended (exit %s): a test changed it" % (
                script, args, interp.name, made[key][0].returncode), pytrace=False)
        if key not in made:
            made[key] = starter(interp, script, *args, **kwargs)
        return made[key]

    def stop():
        starter.stop_all()
        made.clear()
    _shared_stops.append(stop)
    yield get
    _shared_stops.remove(stop)
    stop()


_shared_stops = []      # how to stop each live shared_target fixture's targets


def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or "shared_target" not in nextitem.fixturenames:
        for stop in _shared_stops:
            stop()
