"""`pybpfprof dump --async` (issue 22): the asyncio tasks it reads from
outside a 3.14 process must be the ones the process reports of itself
(names, running or pending, coroutine chains, who awaits whom); under task
churn it must stay bounded; before 3.14 it says it cannot, in one line."""

import json
import os
import re
import resource
import time

import pytest

from conftest import pybpfprof
from profile import func_of, parse_collapsed, total

EXIT_UNSUPPORTED = 5


def needs_314(interp):
    if interp.version < (3, 14):
        pytest.skip("--async reads 3.14's _asyncio debug offsets")


def needs_311(interp):
    if interp.version < (3, 11):
        pytest.skip("dump --async reads 3.11 to 3.13's tasks from asyncio's registries")


def dump_async(pybpfprof, pid, *extra):
    r = pybpfprof("dump", "-p", pid, "--async", *extra, timeout=20)
    assert r.returncode == 0, r.stderr
    return r


def frames(fs):
    return [(f["function"], f["file"], f["line"]) for f in fs]


@pytest.mark.every_version
def test_tasks_match_target(interp, start_target, pybpfprof):
    """3.11 and later. Before 3.14 a task's awaiters are those asyncio's own
    objects give (_fut_waiter, a gather's future's _children), which the
    target walks itself too; on 3.14 that walk gives awaited_by's truth."""
    needs_311(interp)
    proc, pid, ready = start_target(interp, "aiotree.py")
    got = json.loads(dump_async(pybpfprof, pid, "--json").stdout)

    assert got["asyncio_loaded"] is True
    assert all(v == 0 for v in got["unread"].values()), got["unread"]
    want = {t["name"]: t for t in ready["tasks"]}
    seen = {t["name"]: t for t in got["tasks"]}
    for name, w in want.items():
        if interp.version >= (3, 14):
            assert w["awaited_by_walk"] == w["awaited_by"], name
        w["awaited_by"] = w["awaited_by_walk"]
    assert want["spinner"]["awaited_by"] == ["main"], "the gather's children name no awaiter"
    assert sorted(seen) == sorted(want)
    assert len(want) == 6 and any(n.startswith("Task-") for n in want), "the tree changed"
    for name, w in want.items():
        d = seen[name]
        assert d["id"] == w["id"], name
        assert d["thread"] == pid, name
        assert d["state"] == ("running" if w["running"] else "pending"), name
        assert d["chain_complete"] is True, name
        chain = list(reversed(d["frames"]))    # dump: innermost first; the target: outermost
        if w["running"]:
            # It spins on: only where it runs is fixed, not the line.
            assert [f[:2] for f in frames(chain)] == [f[:2] for f in frames(w["frames"])], name
        else:
            assert frames(chain) == frames(w["frames"]), name
            assert chain[0]["function"] == w["get_stack"][0], name
        assert sorted(a["name"] for a in d["awaited_by"]) == w["awaited_by"], name
        assert d["awaiters_unknown"] == 0, name
    # The text form says the same, grouped under the loop's thread.
    text = dump_async(pybpfprof, pid).stdout
    assert "6 asyncio tasks" in text.splitlines()[0]
    by_main = ', awaited by "main"'
    assert 'Task "spinner" (%s) running%s\n' % (want["spinner"]["id"], by_main) in text
    assert 'Task "sleeper" (%s) pending%s\n' % (want["sleeper"]["id"], by_main) in text
    leaf = [n for n in want if n.startswith("Task-")][0]
    assert want[leaf]["awaited_by"] == ["cowaiter", "waiter"], "leaf's awaiters are no set"
    assert re.search(r'Task "%s" \(0x[0-9a-f]+\) pending, awaited by "(co)?waiter", "(co)?waiter"'
                     % leaf, text)


def test_unsupported_before_311(interp, start_target, pybpfprof):
    if interp.version >= (3, 11):
        pytest.skip("supported")
    proc, pid, ready = start_target(interp, "parked.py")
    r = pybpfprof("dump", "-p", pid, "--async")
    assert r.returncode == EXIT_UNSUPPORTED
    assert r.stdout == ""
    assert r.stderr == ("pybpfprof: pid %d: --async: not supported on Python %d.%d (tasks "
                        "are read on 3.11 and later)\n" % (pid, interp.version[0],
                                                             interp.version[1]))


def test_no_asyncio_no_tasks(interp, start_target, pybpfprof):
    needs_311(interp)
    proc, pid, ready = start_target(interp, "parked.py")
    got = json.loads(dump_async(pybpfprof, pid, "--json").stdout)
    if got["asyncio_loaded"]:
        pytest.skip("parked.py's interpreter loaded _asyncio")
    assert got["tasks"] == []


def test_churn_bounded(interp, start_target, pybpfprof, tmp_path):
    """Thousands of tasks made and cancelled a second: 40 reads in a row,
    none crashing, hanging or failing, each bounded in time and memory; the
    parked chain deeper than the bound is cut, and said to be. On 3.14 and,
    for the registries' reader of 3.11 to 3.13, on 3.12, where the same
    target then takes a cpu --async recording (churn_cpu_record)."""
    if interp.version < (3, 14) and interp.name != "3.12":
        pytest.skip("3.14, and 3.12 for the older versions' reader")
    proc, pid, ready = start_target(interp, "aiochurn.py")
    assert ready["rate"] > 2000, "the target churns too slowly to test anything"
    worst, unread, deep_seen, counts = 0.0, {}, 0, []
    for _ in range(40):
        t0 = time.monotonic()
        got = json.loads(dump_async(pybpfprof, pid, "--json").stdout)
        worst = max(worst, time.monotonic() - t0)
        counts.append(len(got["tasks"]))
        for k, v in got["unread"].items():
            unread[k] = unread.get(k, 0) + v
        for t in got["tasks"]:
            if t["name"] == "deep":
                deep_seen += 1
                assert t["chain_complete"] is False and len(t["frames"]) == 64
    assert proc.poll() is None, "the target died"
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print("churn: %.0f tasks/s; %d reads, %d-%d tasks each, slowest %.2f s, max RSS %d KiB, "
          "unread %s" % (ready["rate"], len(counts), min(counts), max(counts), worst,
                         rss_kib, unread))
    assert worst < 5
    assert rss_kib < 200 * 1024
    assert deep_seen >= 30, "the parked task went missing in most reads"
    if interp.version < (3, 14):
        churn_cpu_record(proc, pid, tmp_path)


def churn_cpu_record(proc, pid, tmp_path):
    """3.11 to 3.13, cpu mode: the running task's awaiters come from reads of the
    registries made when samples are named, paced (10x a read's time between
    two): against the churn they happen, the run ends normally, the target
    lives, and they take a bounded share of the run."""
    r = pybpfprof("-p", pid, "-d", 1.5, "--mode", "cpu", "--async", "--stats=json", "-o",
                    tmp_path / "churn.txt")
    assert r.returncode == 0, r.stderr
    st = json.loads([l for l in r.stderr.splitlines() if l.startswith("{")][0])
    a = st["async"]
    print("churn cpu --async: %d task-list reads, %.3f s of %.2f s, %d unread" % (
        a["task_lists"], a["task_list_seconds"], st["seconds"], a["task_list_unread"]))
    assert proc.poll() is None, "the target died"
    assert a["task_lists"] >= 1 and a["waiting_task_samples"] == 0
    assert a["task_list_seconds"] < 0.3 * st["seconds"], a


# --- record --async ----------------------------------------------------------------

def record_async(pid, mode, tmp_path):
    out = str(tmp_path / ("%s.txt" % mode))
    r = pybpfprof("-p", pid, "-d", 2, "--mode", mode, "--async", "-q", "-o", out)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        return parse_collapsed(f.read())


def task_profiles(interp, older=("3.11", "3.12", "3.13")):
    """record/top --async: 3.14 (the kernel's copy of the running task), and
    the older versions named (their registries, read at the sample)."""
    if interp.version < (3, 14) and interp.name not in older:
        pytest.skip("3.14, and %s for 3.11 to 3.13's reader" % ", ".join(older))


def check_running(stacks, interp):
    """The spinning task's samples sit under 'task main;task spinner', between the
    loop's frames and its coroutine: the gather's task awaits it (3.14: its
    awaited_by; before, the gather's future's _children)."""
    want = ["task main"]
    spin = [(f, c) for f, c in stacks if func_of(f[-1]) == "spinner"]
    assert total(spin) > 0.8 * total(stacks), stacks[:5]
    for frames, count in spin:
        funcs = [func_of(x) for x in frames]
        i = funcs.index("Handle._run")
        assert funcs[i + 1:] == want + ["task spinner", "spinner"], funcs
    return total(spin)


def test_record_running_task(interp, start_target, tmp_path):
    task_profiles(interp, ("3.12",))
    proc, pid, ready = start_target(interp, "aiotree.py")
    check_running(record_async(pid, "cpu", tmp_path), interp)


def waiting_stacks(ready, interp):
    """What a wall tick counts for each waiting task of aiotree: its awaiters'
    task frames (the first of a set: either of leaf's two), the task, its
    coroutine chain as the target reports it (asyncio's own coroutines at its
    end folded into the leaf), and the leaf."""
    tasks = {t["name"]: t for t in ready["tasks"]}
    leaf = [n for n in tasks if n.startswith("Task-")][0]

    def chain(name, n):
        return [(f["function"], f["line"]) for f in tasks[name]["frames"][:n]]
    main = ["task main"]        # the gather's task, on every version
    return {
        "main": [["task main"]], "sleeper": [main + ["task sleeper"]],
        "waiter": [main + ["task waiter"]], "cowaiter": [["task cowaiter"]],
        leaf: [main + ["task waiter", "task " + leaf], ["task cowaiter", "task " + leaf]],
    }, {
        "main": (chain("main", 1), "[awaiting] _GatheringFuture"),
        "sleeper": (chain("sleeper", 1), "[awaiting] asyncio.sleep"),
        "waiter": (chain("waiter", 2), "[awaiting] task " + leaf),
        "cowaiter": (chain("cowaiter", 1), "[awaiting] task " + leaf),
        leaf: (chain(leaf, 1), "[awaiting] asyncio.Event.wait"),
    }


def test_record_wall_tasks(interp, start_target, tmp_path):
    """Wall mode: the running task as in cpu mode, and each waiting task once a
    tick as its own stack, awaiters, chain (exact lines) and what it awaits:
    each as many samples as the loop's thread, within 10%. 3.14 and 3.11 to 3.13."""
    task_profiles(interp)
    proc, pid, ready = start_target(interp, "aiotree.py")
    stacks = record_async(pid, "wall", tmp_path)
    waiting = [(f, c) for f, c in stacks if f[-1].startswith("[awaiting] ")]
    thread = check_running([(f, c) for f, c in stacks if (f, c) not in waiting], interp)
    roots, chains = waiting_stacks(ready, interp)
    got = {}
    for frames, count in waiting:
        tasks = [x for x in frames if x.startswith("task ")]
        name = tasks[-1][5:]
        assert tasks in roots[name], frames
        assert frames[:len(tasks)] == tasks, frames
        body = [(func_of(x), int(re.search(r":(\d+)\)$", x).group(1))) for x in frames[len(tasks):-1]]
        assert (body, frames[-1]) == chains[name], frames
        got[name] = got.get(name, 0) + count
    print("wall --async: thread %d samples, waiting tasks %s" % (thread, got))
    assert sorted(got) == sorted(chains)
    for name, n in got.items():
        assert 0.9 * thread <= n <= 1.1 * thread, (name, n, thread)


def test_record_switching_tasks(interp, start_target, tmp_path):
    """Two tasks taking turns every 2 ms: each sample names the task whose
    code it holds, or none (a switch between the sample and its naming)."""
    needs_314(interp)
    proc, pid, ready = start_target(interp, "aioswitch.py")
    stacks = record_async(pid, "cpu", tmp_path)
    work = {"alpha_work": "alpha", "beta_work": "beta"}
    tasked = untasked = 0
    for frames, count in stacks:
        funcs = [func_of(x) for x in frames]
        leafwork = [f for f in funcs if f in work]
        if not leafwork:
            continue
        tasks = [f for f in funcs if f.startswith("task ")]
        if not tasks:
            untasked += count
            continue
        tasked += count
        assert tasks == ["task main", "task " + work[leafwork[0]]], funcs
        assert funcs[funcs.index(tasks[-1]) + 1] == work[leafwork[0]], funcs
    print("switching: %d samples named with their task, %d left without" % (tasked, untasked))
    assert tasked > 0.8 * (tasked + untasked)


def test_record_async_before_311(interp, start_target, tmp_path):
    """Before 3.11 --async adds nothing, and the profile is the plain one."""
    if interp.version >= (3, 11) or interp.version < (3, 7):
        pytest.skip("3.7 to 3.10")
    proc, pid, ready = start_target(interp, "aioswitch.py")
    stacks = record_async(pid, "cpu", tmp_path)
    assert total(stacks) > 0
    assert not any(func_of(x).startswith("task ") for f, _ in stacks for x in f)


def test_record_churn(interp, start_target, tmp_path):
    """Tasks made and cancelled by the thousand a second while sampled: the
    run ends normally and the loop's own task is named. (About half the
    samples get no task: the loop's own code between tasks, a task being
    stepped before its coroutine runs, or one freed by the time it is named.)"""
    needs_314(interp)
    proc, pid, ready = start_target(interp, "aiochurn.py")
    stacks = record_async(pid, "cpu", tmp_path)
    assert proc.poll() is None, "the target died"
    named = sum(c for f, c in stacks if any(func_of(x).startswith("task ") for x in f))
    print("churn record: %d of %d samples under a task" % (named, total(stacks)))
    assert named > 0.2 * total(stacks)


def test_top_async(interp, start_target, pybpfprof):
    """top --async -m wall: the waiting tasks' samples are counted apart in the
    head (five tasks parked: five times the thread's), the thread's own row and
    status are its samples alone, and each task is a function of the table:
    of six stacks a tick, the spinner and each parked sleep one sixth, and main
    awaited by all but cowaiter (and leaf, when its set gives cowaiter first)."""
    needs_314(interp)
    proc, pid, ready = start_target(interp, "aiotree.py")
    r = pybpfprof("top", "--once", "-m", "wall", "--async", "-p", pid)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    samples = int(re.match(r"samples (\d+) in", lines[1]).group(1))
    waiting = int(re.match(r"waiting tasks (\d+) samples more \(--async", lines[2]).group(1))
    assert samples >= 50 and 4.5 * samples <= waiting <= 5.5 * samples, r.stdout
    thread = re.match(r"^(\d+) \S+\s+(\d+)  ", lines[4])
    assert int(thread.group(2)) == samples and "unknown" not in lines[4], r.stdout
    funcs = {}
    for line in lines[6:]:
        m = re.match(r"^\s*([\d.]+)\s+([\d.]+)  (.+?)  ", line)
        funcs[m.group(3)] = (float(m.group(1)), float(m.group(2)))
    # (20 rows by own share: the task frames, own 0, may not all be shown.)
    for name in ("spinner", "[awaiting] asyncio.sleep", "[awaiting] asyncio.Event.wait"):
        assert abs(funcs[name][0] - 100 / 6) <= 5, (name, r.stdout)
    assert abs(funcs["task main"][1] - 100 * 5 / 6) <= 5 or abs(funcs["task main"][1] - 100 * 4 / 6) <= 5


# --- issue 30: every tick, every task ---------------------------------------------

def recent_interp(interp, legacy="3.12"):
    """One reader each: 3.14's lists, and 3.11 to 3.13's registries on `legacy`."""
    if interp.version < (3, 14) and interp.name != legacy:
        pytest.skip("3.14, and %s for 3.11 to 3.13's registries" % legacy)


@pytest.mark.families
def test_wall_many_tasks_every_tick(interp, start_target, tmp_path):
    """Wall mode with 1,000 parked tasks: a read of their list takes long and
    the next waits 10 times that, yet each tick counts every parked task once,
    from the last read: each task has as many samples as the loop's thread
    (what the run counted of it, not wall time), none said missing, and the
    waiting samples are those --stats=json gives. The spinner, which a read
    may find between its steps, is never counted waiting at a tick whose
    stack shows it running (it had more samples than its thread)."""
    recent_interp(interp)
    # The spinner naps 1 ms between steps: a read finds it waiting a third of the time.
    proc, pid, ready = start_target(interp, "aiomany.py", 1000, 0.001)
    out = tmp_path / "many.txt"
    r = pybpfprof("-p", pid, "-d", 2, "-F", 49, "--mode", "wall", "--async", "--stats=json",
                    "-o", out)
    assert r.returncode == 0, r.stderr
    st = json.loads([l for l in r.stderr.splitlines() if l.startswith("{")][0])
    stacks = parse_collapsed(out.read_text())
    parked = {}
    for frames, count in stacks:
        tasks = [x for x in frames if re.match(r"task p\d+$", x)]
        if tasks:
            parked[tasks[-1]] = parked.get(tasks[-1], 0) + count
    waiting = sum(c for f, c in stacks if f[-1].startswith("[awaiting] "))
    thread = total(stacks) - waiting
    low, high = min(parked.values()), max(parked.values())
    # The spinner runs at most ticks and waits (ready) at others: once a tick
    # at most, never as running in its thread's stack and waiting beside it.
    spinner = sum(c for f, c in stacks if "task spinner" in f)
    print("wall --async, 1000 parked: thread %d samples, each parked task %d to %d, spinner %d; "
          "%d task-list reads, %.3f s" % (thread, low, high, spinner, st["async"]["task_lists"],
                                          st["async"]["task_list_seconds"]))
    assert len(parked) == 1000 and thread >= 50, (len(parked), thread)
    assert low >= 0.98 * thread and high <= thread, (low, high, thread)
    assert 0 < spinner <= thread, (spinner, thread)
    assert st["async"]["waiting_task_samples"] == waiting
    assert st["async"]["waiting_task_samples_missed"] == 0
    assert "not counted" not in r.stderr


@pytest.mark.families
def test_wall_launched_tasks_all_parked(interp, tmp_path):
    """A launched command imports asyncio after the run started, and all its
    tasks wait: no sample of a running task names one, so the wall tick
    itself must look for asyncio's layout again, else no waiting task is
    ever counted (0 samples, exit 0)."""
    recent_interp(interp)
    if interp.chrooted:
        pytest.skip("launched from the host: an interpreter of the host")
    code = ("import asyncio\n"
            "async def parked(ev): await ev.wait()\n"
            "async def main():\n"
            "    ev = asyncio.Event()\n"
            "    ts = [asyncio.create_task(parked(ev)) for _ in range(50)]\n"
            "    await asyncio.sleep(4)\n"
            "    ev.set(); await asyncio.gather(*ts)\n"
            "asyncio.run(main())\n")
    out = tmp_path / "parked.txt"
    r = pybpfprof("-d", 3, "-F", 19, "--mode", "wall", "--async", "--stats=json", "-o", out,
                    "--", interp.host_executable, "-c", code, timeout=60)
    assert r.returncode == 0, r.stderr
    st = json.loads([l for l in r.stderr.splitlines() if l.startswith("{")][0])
    waiting = sum(c for f, c in parse_collapsed(out.read_text()) if f[-1].startswith("[awaiting] "))
    assert st["async"]["task_lists"] > 0, st["async"]
    assert waiting == st["async"]["waiting_task_samples"] and waiting >= 50, (waiting, st["async"])


TWO_TASKS = """
import asyncio, sys, time
async def work(name):
    while True:
        t = time.process_time()
        while time.process_time() - t < 0.003:
            pass
        await asyncio.sleep(0)
async def main():
    for name in ("alpha", "bravo"):
        asyncio.create_task(work(name), name=name)
    await asyncio.sleep(float(sys.argv[1]))
asyncio.run(main())
"""


@pytest.mark.families
def test_launched_tasks_named_from_their_start(interp, tmp_path):
    """A launched command imports asyncio after the run started: its layout
    was looked for again only a second later, and a 2 s run had a third to
    half of its two tasks' samples with no task frame (3.12-3.14). It is
    looked for every 25 ms in the first second: nearly every sample of
    work() is under its task."""
    recent_interp(interp)
    script = tmp_path / "two_tasks.py"
    script.write_text(TWO_TASKS)
    out = tmp_path / "tasks.txt"
    r = pybpfprof("-F", 499, "--async", "-o", out, "--", *interp.cmd(interp.place(str(script)), 2),
                  timeout=60)
    assert r.returncode == 0, r.stderr
    work = [(f, c) for f, c in parse_collapsed(out.read_text()) if "work" in map(func_of, f)]
    named = sum(c for f, c in work if "task alpha" in f or "task bravo" in f)
    n = sum(c for _, c in work)
    print("%s: %d of %d samples of work() under their task" % (interp.name, named, n))
    assert n >= 100 and named >= 0.85 * n, (named, n, r.stderr[-2000:])


@pytest.mark.families
def test_cpu_awaited_task_every_sample(interp, start_target, tmp_path):
    """cpu mode: task db-query, awaited by task fetch-users, burns 2 ms between
    2 ms sleeps. Every sample in burn() carries both task frames, in order,
    above db_query: the task is the one at the sample (3.11 to 3.13: the
    kernel's coroutine frame), not the one running when it is named, often
    none by then."""
    if interp.version < (3, 11):
        pytest.skip("--async: 3.11 and later")
    proc, pid, ready = start_target(interp, "aiodbquery.py")
    out = tmp_path / "dbq.txt"
    r = pybpfprof("-p", pid, "-d", 3, "-F", 199, "--mode", "cpu", "--async", "-q", "-o", out)
    assert r.returncode == 0, r.stderr
    burn = tasked = 0
    for frames, count in parse_collapsed(out.read_text()):
        funcs = [func_of(x) for x in frames]
        if "burn" not in funcs:
            continue
        burn += count
        i = funcs.index("db_query")
        if funcs[i - 2:i] == ["task fetch-users", "task db-query"]:
            tasked += count
    print("cpu --async: %d of %d burn samples under their tasks" % (tasked, burn))
    assert burn >= 50 and tasked == burn, (tasked, burn)


@pytest.mark.families
def test_top_wall_many_tasks_each_interval(interp, start_target, pybpfprof):
    """top closes a window every interval: each interval's table still counts
    every waiting task (200 parked and main; the spinner too when a read
    fell between its steps) once for each of the thread's ticks in it, not in
    lumps when a paced read comes round. One interpreter: the windows are no
    layout's."""
    if interp.name != "3.12":
        pytest.skip("the windows are no layout's: 3.12 only")
    proc, pid, ready = start_target(interp, "aiomany.py", 200)
    r = pybpfprof("top", "-p", pid, "--async", "-m", "wall", "-F", 49, "-d", 2.2,
                  "--interval", 0.5)
    assert r.returncode == 0, r.stderr
    tables = re.findall(r"^samples (\d+) in .*\n(?:waiting tasks (\d+) samples more)?",
                        r.stdout, re.M)
    print("top --async, 200 parked: (samples, waiting) %s" % tables)
    assert len(tables) >= 3, r.stdout
    for samples, waiting in tables:
        # A little under: a tick whose own stack could not be read counts no
        # task; over: a read made between the spinner's steps counts it too.
        n = int(samples)
        assert n > 0 and 0.95 * 201 * n <= int(waiting or 0) <= 202 * n, tables


def burst_misses(stacks, bursts):
    """Per burst of aiolate.py: the ticks since it (the marker thread's
    samples in made{j}, j >= k) and the fewest samples of one of its tasks."""
    made = [0] * bursts
    fewest = [None] * bursts
    counts = {}
    for frames, count in stacks:
        names = [func_of(f) for f in frames]
        phase = [int(x[4:]) for x in names if re.match(r"made\d+$", x)]
        if phase:
            made[phase[-1]] += count
        tasks = [x for x in frames if re.match(r"task b\d+n\d+$", x)]
        if tasks:
            counts[tasks[-1]] = counts.get(tasks[-1], 0) + count
    for name, n in counts.items():
        k = int(re.match(r"task b(\d+)n", name).group(1))
        fewest[k] = n if fewest[k] is None else min(fewest[k], n)
    return [(sum(made[k:]), fewest[k] or 0) for k in range(bursts)]


@pytest.mark.families
def test_wall_tasks_made_mid_run(interp, start_target, tmp_path):
    """Tasks made while the run records: a read of 5,000 parked tasks takes
    long and the next waited 10 times that, so a task made after a read was
    counted only from the next (3.12, 1,000 tasks: 11 ticks short of 371;
    here 4 bursts of 20 tasks missed 24 to 60 read times in all). A change
    the tick sees cheaply (the list's head on 3.14, the registries' counts
    before) reads at once: each burst's tasks have the ticks since it was
    made (which the target's marker thread counts in its own stack) but a
    tick or two (the tick that sees the change, and the one that finds it
    settled). One burst may miss more: one that comes within 12 read times
    of an early read waits for the regular one (a read slowed by the load
    of the machine makes those long)."""
    needs_311(interp)
    bursts, freq = 4, 299
    proc, pid, ready = start_target(interp, "aiolate.py", 5000, bursts, 2.0, 20)
    out = tmp_path / "late.txt"
    r = pybpfprof("-p", pid, "-d", 9, "-F", freq, "--mode", "wall", "--async", "--stats=json",
                  "-o", out, timeout=60)
    assert r.returncode == 0, r.stderr
    st = json.loads([l for l in r.stderr.splitlines() if l.startswith("{")][0])["async"]
    per = burst_misses(parse_collapsed(out.read_text()), bursts)
    missed = [ticks - fewest for ticks, fewest in per]
    print("%s: bursts (ticks since, fewest samples of its tasks) %s; missed %s; "
          "%d task-list reads, %.3f s" % (interp.name, per, missed, st["task_lists"],
                                           st["task_list_seconds"]))
    assert all(ticks >= 100 for ticks, fewest in per), per
    assert len([m for m in missed if m > 3]) <= 1, (missed, per)
