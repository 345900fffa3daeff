"""How the integration tests run the binary under test: build/pybpfprof, or
$PBP_BIN (the ASan build in `make integration-asan`), one way for every test
(pybpfprof(), also the `pybpfprof` fixture), and the check that no run left
a sanitizer report. conftest.py re-exports all of it."""

import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYBPFPROF = os.environ.get("PBP_BIN") or os.path.join(REPO, "build", "pybpfprof")
SANITIZED = os.environ.get("PBP_SANITIZED", "") not in ("", "0")
SANITIZER_LOGS = os.environ.get("PBP_SANITIZER_LOGS", "")


# --- pybpfprof -----------------------------------------------------------------

def pybpfprof(*args, **kwargs):
    """Run build/pybpfprof with the arguments; CompletedProcess with text
    stdout/stderr. Fails the test when it is not built or times out. The one
    way the tests run the binary (also as the `pybpfprof` fixture)."""
    timeout = kwargs.pop("timeout", 120)
    if not os.access(PYBPFPROF, os.X_OK):
        pytest.fail("%s is not built (make all)" % os.path.relpath(PYBPFPROF, REPO),
                    pytrace=False)
    cmd = [PYBPFPROF] + [str(a) for a in args]
    try:
        return subprocess.run(cmd, capture_output=True, universal_newlines=True,
                              timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        pytest.fail("pybpfprof %s timed out after %gs\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(cmd[1:]), timeout, text(e.stdout)[-2000:], text(e.stderr)[-2000:]),
            pytrace=False)


@pytest.fixture(name="pybpfprof")
def pybpfprof_fixture():
    return pybpfprof


# --- sanitizers ------------------------------------------------------------------

def _sanitizer_reports():
    try:
        return set(os.listdir(SANITIZER_LOGS))
    except OSError:
        return set()


@pytest.fixture(autouse=True)
def _no_sanitizer_report():
    """Under PBP_SANITIZER_LOGS: fail the test during which any run of the
    binary left a report, even one whose exit code the test accepts (a dump
    racing a dying target may exit 0, 3 or 8) or that ran in the background."""
    if not SANITIZER_LOGS:
        yield
        return
    before = _sanitizer_reports()
    yield
    new = sorted(_sanitizer_reports() - before)
    if new:
        texts = []
        for name in new:
            try:
                with open(os.path.join(SANITIZER_LOGS, name), errors="replace") as f:
                    texts.append("%s:\n%s" % (name, f.read()[-6000:]))
            except OSError as e:
                texts.append("%s: %s" % (name, e))
        pytest.fail("sanitizer report(s) in %s:\n%s" % (SANITIZER_LOGS, "\n".join(texts)),
                    pytrace=False)
