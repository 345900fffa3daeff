"""Profiling target: threads parked forever at known Python stacks.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

Every thread, the main one included, ends up blocked in the C call
PARK.acquire() on a lock that is never released, so no Python code runs in
it any more and its stack stays still until the process is killed. The lines
that park carry a "# park: ROLE" comment; tests find them by that comment.

Once all of them are parked, a short-lived reporter thread snapshots the
stacks with sys._current_frames(), writes them as JSON to the ready file
(atomically: a temporary file renamed into place) and exits. The reporter is
left out of "threads"; its ids are under "reporter" so a test can wait for
its OS thread to be gone (/proc/PID/task/NATIVE_ID). Then the process holds
exactly len(threads) OS threads.

Ready file: $PBP_READY, or the first argument. Its JSON:
  {"pid": int, "version": [major, minor, micro], "executable": str,
   "script": this file's path as the interpreter sees it,
   "reporter": {"ident", "native_id", "name"},
   "threads": [{"role", "ident", "native_id", "name",
                "frames": [{"name": co_name,
                            "qualname": co_qualname (3.11+) or null,
                            "file": co_filename, "line": f_lineno,
                            "firstlineno": co_firstlineno}, ...]}]}
frames run innermost first. On failure it writes {"error": "..."} instead
and exits with status 1.
"""

import ctypes
import json
import os
import re
import sys
import threading
import time

from pbp_target import give_threads_native_ids, native_id


give_threads_native_ids()


RECURSION_DEPTH = 300
PARK_TIMEOUT = 60.0

# A code line ending in "# park: ROLE" (tests use the same pattern).
PARK_MARK = re.compile(r"^\s*[^#\s].*#\s*park:\s*([\w-]+)\s*$")

PARK = threading.Lock()
PARK.acquire()  # never released: PARK.acquire() blocks for good


# --- the parked stacks --------------------------------------------------------

def park_main():
    PARK.acquire()  # park: main


def recurse(n):
    if n > 1:
        recurse(n - 1)  # park: recurse-caller
    else:
        PARK.acquire()  # park: recurse


def recursion_entry():
    recurse(RECURSION_DEPTH)


class Worker(object):
    def run_outer(self):
        self.run_inner()

    def run_inner(self):
        PARK.acquire()  # park: method


def method_entry():
    Worker().run_outer()


def gen_body():
    yield 0
    PARK.acquire()  # park: generator
    yield 1


def generator_entry():
    g = gen_body()
    next(g)
    next(g)


def lambda_entry():
    parked = lambda: PARK.acquire()  # park: lambda
    parked()


def make_closure(tag):
    def inner():
        if tag:
            PARK.acquire()  # park: closure
    return inner


def closure_entry():
    make_closure("closure")()


# role -> (thread name, thread target, code object of the innermost frame)
THREADS = {
    "recurse": ("pbp-recurse", recursion_entry, recurse.__code__),
    "method": ("pbp-method", method_entry, Worker.run_inner.__code__),
    "generator": ("pbp-generator", generator_entry, gen_body.__code__),
    "lambda": ("pbp-lambda", lambda_entry, None),  # a fresh <lambda> code
    "closure": ("pbp-closure", closure_entry, make_closure("").__code__),
}


# --- reporting ----------------------------------------------------------------

def park_lines():
    """role -> line number of the line marked "# park: role" in this file."""
    lines = {}
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            m = PARK_MARK.match(text)
            if m:
                lines[m.group(1)] = number
    return lines


def frame_list(frame):
    frames = []
    while frame is not None:
        code = frame.f_code
        frames.append({
            "name": code.co_name,
            "qualname": getattr(code, "co_qualname", None),
            "file": code.co_filename,
            "line": frame.f_lineno,
            "firstlineno": code.co_firstlineno,
        })
        frame = frame.f_back
    return frames


def task_state(native_id):
    """One-letter /proc state of a thread of ours, None without /proc."""
    try:
        with open("/proc/self/task/%d/stat" % native_id) as f:
            return f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def write_json(path, obj):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def snapshot(roles, lines):
    """The parked threads' frames, or None while one is not parked yet."""
    current = sys._current_frames()
    threads = []
    for role, thread in roles:
        frame = current.get(thread.ident)
        if frame is None or frame.f_lineno != lines[role]:
            return None
        want = THREADS[role][2] if role in THREADS else park_main.__code__
        if want is not None and frame.f_code is not want:
            return None
        if want is None and frame.f_code.co_name != "<lambda>":
            return None
        if task_state(thread.native_id) not in (None, "S"):
            return None  # still on its way into the futex wait
        threads.append({
            "role": role,
            "ident": thread.ident,
            "native_id": thread.native_id,
            "name": thread.name,
            "frames": frame_list(frame),
        })
    return threads


def report(ready_path, roles):
    me = threading.current_thread()
    result = {"error": "threads did not park within %gs" % PARK_TIMEOUT}
    try:
        lines = park_lines()
        deadline = time.monotonic() + PARK_TIMEOUT
        previous = None
        while time.monotonic() < deadline:
            threads = snapshot(roles, lines)
            # Parked means: the same stacks in two snapshots 50 ms apart.
            if threads is not None and threads == previous:
                result = {
                    "pid": os.getpid(),
                    "version": list(sys.version_info[:3]),
                    "executable": sys.executable,
                    "script": os.path.abspath(__file__),
                    "reporter": {"ident": me.ident, "native_id": me.native_id,
                                 "name": me.name},
                    "threads": threads,
                }
                break
            previous = threads
            time.sleep(0.05)
    except Exception as e:  # report it rather than hang the test
        result = {"error": "%s: %s" % (type(e).__name__, e)}
    write_json(ready_path, result)
    if "error" in result:
        os._exit(1)


def main():
    if len(sys.argv) > 1:
        ready_path = sys.argv[1]
    else:
        ready_path = os.environ["PBP_READY"]
    roles = [("main", threading.main_thread())]
    for role, (name, target, _) in THREADS.items():
        thread = threading.Thread(name=name, target=target)
        thread.daemon = True
        thread.start()
        roles.append((role, thread))
    reporter = threading.Thread(name="pbp-reporter", target=report,
                                args=(ready_path, roles))
    reporter.daemon = True
    reporter.start()
    park_main()


if __name__ == "__main__":
    main()
