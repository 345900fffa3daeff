#!/usr/bin/env python3
"""Soak test: `make soak` (root; not part of `make test`).

    SOAK_SECONDS=1800 SOAK_MODE=cpu SOAK_PYTHON=python3 scripts/soak.py [churn] [agent]

Two cases, both by default, one after the other: churn (below) and agent
(scripts/soak_agent.py: `pybpfprof agent` over 50 short-lived processes,
SOAK_AGENT_SECONDS and SOAK_AGENT_PROCS).

Profiles a churning target (tests/integration/targets/churn.py: thousands of
threads and code objects created and freed every second) at 999 Hz for
SOAK_SECONDS (default 30 minutes), and every 10 s records pybpfprof's
resident memory (VmRSS) and open file descriptors, with the target's
counts, in bench/soak.csv. Then it checks that neither grows: the final
value must be at most 1.2 times the value at 60 s plus a small slack (4 MiB
of RSS, 2 fds), that pybpfprof exited 0, and that its profile parses.

SOAK_MODE (cpu, wall or gil; default cpu), SOAK_HZ (default 999) and
SOAK_PYTHON (the target's interpreter; default this one) change the run.
Exit status 0 when flat, 1 when not (the CSV says where it grew).
"""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import soak_agent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYBPFPROF = os.environ.get("PYBPFPROF") or os.path.join(REPO, "build", "pybpfprof")
CHURN = os.path.join(REPO, "tests", "integration", "targets", "churn.py")
CSV = os.path.join(REPO, "bench", "soak.csv")
EVERY = 10.0
BASELINE_AT = 60.0
GROWTH = 1.2
RSS_SLACK_KB = 4096
FD_SLACK = 2


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def start_target(python, tmp):
    ready = os.path.join(tmp, "ready.json")
    target = subprocess.Popen([python, CHURN], env=dict(os.environ, PBP_READY=ready),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready):
        if target.poll() is not None or time.monotonic() > deadline:
            sys.exit("soak: the churn target did not start")
        time.sleep(0.05)
    return target, ready + ".counts"


def check_profile(path):
    stacks = 0
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8").splitlines():
            frames, _, count = line.rpartition(" ")
            if not frames or int(count) <= 0:
                raise ValueError("bad line: %r" % line[:200])
            stacks += 1
    return stacks


def churn():
    seconds = float(os.environ.get("SOAK_SECONDS", "1800"))
    mode = os.environ.get("SOAK_MODE", "cpu")
    hz = os.environ.get("SOAK_HZ", "999")
    python = os.environ.get("SOAK_PYTHON", sys.executable)
    if seconds < BASELINE_AT + EVERY:
        sys.exit("soak: SOAK_SECONDS must be at least %d" % (BASELINE_AT + EVERY))
    if not os.access(PYBPFPROF, os.X_OK):
        sys.exit("soak: build/pybpfprof is not built (make all)")
    tmp = tempfile.mkdtemp(prefix="pbp-soak-")
    target, counts_path = start_target(python, tmp)
    out = os.path.join(tmp, "profile.txt")
    prof = subprocess.Popen([PYBPFPROF, "-p", str(target.pid), "-F", hz, "-m", mode,
                             "-d", str(seconds), "-q", "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    rows = []
    os.makedirs(os.path.dirname(CSV), exist_ok=True)
    print("soak: %s mode at %s Hz for %g s, target %s (pid %d), pybpfprof pid %d" % (
        mode, hz, seconds, python, target.pid, prof.pid), flush=True)
    try:
        t0 = time.monotonic()
        next_at = t0 + EVERY
        while prof.poll() is None:
            time.sleep(max(0.0, min(1.0, next_at - time.monotonic())))
            if time.monotonic() < next_at or prof.poll() is not None:
                continue
            next_at += EVERY
            try:
                row = {"seconds": round(time.monotonic() - t0, 1),
                       "rss_kb": status_kb(prof.pid, "VmRSS"),
                       "hwm_kb": status_kb(prof.pid, "VmHWM"),
                       "fds": nfds(prof.pid)}
            except OSError:
                break   # it just exited
            c = read_json(counts_path)
            row["target_threads"] = c.get("threads", "")
            row["target_codes"] = c.get("codes", "")
            rows.append(row)
            print("soak: %(seconds)6.0f s  rss %(rss_kb)7d KiB  fds %(fds)3d  "
                  "target threads %(target_threads)s codes %(target_codes)s" % row, flush=True)
            with open(CSV, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(row))
                w.writeheader()
                w.writerows(rows)
        err = prof.communicate(timeout=120)[1].decode(errors="replace")
    finally:
        if prof.poll() is None:
            prof.kill()
            prof.wait()
        os.killpg(target.pid, signal.SIGKILL)
        target.wait()
    failures = []
    if prof.returncode != 0:
        failures.append("pybpfprof exited %d: %s" % (prof.returncode, err.strip()[-2000:]))
    else:
        try:
            print("soak: profile has %d distinct stacks" % check_profile(out))
        except (OSError, ValueError) as e:
            failures.append("the profile does not parse: %s" % e)
    base = [r for r in rows if r["seconds"] >= BASELINE_AT - 1]
    if len(base) < 2:
        failures.append("too few samples after %g s: %d" % (BASELINE_AT, len(base)))
    else:
        first, last = base[0], base[-1]
        for key, slack in (("rss_kb", RSS_SLACK_KB), ("fds", FD_SLACK)):
            limit = GROWTH * first[key] + slack
            verdict = "ok" if last[key] <= limit else "GREW"
            print("soak: %s %d at %g s, %d at %g s (limit %d): %s" % (
                key, first[key], first["seconds"], last[key], last["seconds"], limit, verdict))
            if last[key] > limit:
                failures.append("%s grew from %d to %d" % (key, first[key], last[key]))
    shutil.rmtree(tmp, ignore_errors=True)
    print("soak: samples in %s" % os.path.relpath(CSV, REPO))
    return failures


def main():
    cases = sys.argv[1:] or ["churn", "agent"]
    failures = []
    for case in cases:
        if case == "churn":
            failures += churn()
        elif case == "agent":
            failures += soak_agent.run()
        else:
            sys.exit("soak: unknown case %r (churn, agent)" % case)
    for f in failures:
        print("soak: FAILED: %s" % f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
