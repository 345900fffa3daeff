"""Target for test_subprocesses: a tree of processes, each spinning in a
function of its own and measuring the CPU time it spent there.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    tree.py pool METHOD OUT      multiprocessing.Pool(2), start METHOD (fork,
                                 forkserver, spawn): each task spins in
                                 work() for SPIN s of CPU; OUT gets one JSON
                                 line per task {"pid", "work", "total"}
                                 (CPU seconds in work(), and of the process
                                 when the task ended)
    tree.py chain DEPTH          spins in level_DEPTH() (main, child,
                                 grandchild: 2, 1, 0) and starts the next
                                 level as a new interpreter (subprocess)
    tree.py brief N MS           forks N workers one after the other, each
                                 spinning MS ms of CPU in brief() and
                                 exiting at once; prints their pids
    tree.py server N             a socketserver.ForkingTCPServer: each of N
                                 requests (from a client thread) is
                                 handled in a forked child spinning 0.2 s
                                 in handle_spin(); prints the handlers' pids
    tree.py storm N K MS         forks N children, K alive at a time, each
                                 spinning MS ms of CPU in storm_work() and
                                 exiting at once; prints {"pid": its own,
                                 "children": CPU seconds of them all
                                 (RUSAGE_CHILDREN)}
    tree.py twins ROUNDS         forks two children at once, ROUNDS times:
                                 each compiles a function of its own
                                 (twin_a, twin_b: same size, different
                                 first lines) that lands at the same
                                 address in both, and spins in it (a 0.3 s,
                                 b 0.6 s); prints one JSON line per child
                                 {"pid", "name", "code": id of its code}
    tree.py late                 writes $PBP_READY, then forks a worker
                                 spinning 0.3 s in late_work() every 0.5 s,
                                 for 60 s; a child forked before ready
                                 spins in early_work() meanwhile
"""

import json
import multiprocessing
import os
import resource
import socket
import socketserver
import subprocess
import sys
import threading
import time

from pbp_target import say_ready

SPIN = float(os.environ.get("PBP_SPIN", "1.0"))


def spin(seconds):
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass
    return time.process_time() - t0


def work(i):
    spent = spin(SPIN)
    return {"pid": os.getpid(), "work": spent, "total": time.process_time()}


def pool(method, out):
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as p:
        res = p.map(work, range(2), chunksize=1)
    with open(out, "w") as f:
        for r in res:
            f.write(json.dumps(r) + "\n")


def level_0():
    spin(0.4)


def level_1():
    spin(0.4)


def level_2():
    spin(0.4)


def chain(depth):
    [level_0, level_1, level_2][depth]()
    if depth:
        subprocess.check_call([sys.executable, os.path.abspath(__file__), "chain", str(depth - 1)])


def brief(ms):
    spin(ms / 1000.0)


def run_brief(n, ms):
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            brief(ms)
            os._exit(0)
        print(pid, flush=True)
        os.waitpid(pid, 0)


# Same length, so both compile alike: the first line differs (2, 3).
TWINS = {"twin_a": ("#\ndef twin_a(s):\n    return spin(s)\n", 0.3),
         "twin_b": ("\n\ndef twin_b(s):\n    return spin(s)\n", 0.6)}


def twins(rounds):
    for _ in range(rounds):
        kids = []
        for name in sorted(TWINS):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                src, seconds = TWINS[name]
                ns = {"spin": spin}
                exec(compile(src, "twins", "exec"), ns)
                os.write(w, json.dumps({"pid": os.getpid(), "name": name,
                                        "code": id(ns[name].__code__)}).encode())
                os.close(w)
                ns[name](seconds)
                os._exit(0)
            os.close(w)
            kids.append((pid, r))
        for pid, r in kids:
            print(os.read(r, 4096).decode(), flush=True)
            os.close(r)
            os.waitpid(pid, 0)


def storm_work(ms):
    spin(ms / 1000.0)


def storm(n, k, ms):
    live = 0
    for _ in range(n):
        if live >= k:
            os.wait()
            live -= 1
        if os.fork() == 0:
            storm_work(ms)
            os._exit(0)
        live += 1
    for _ in range(live):
        os.wait()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"pid": os.getpid(), "children": ru.ru_utime + ru.ru_stime}), flush=True)


def handle_spin():
    spin(0.2)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(16)
        handle_spin()
        self.request.sendall(str(os.getpid()).encode())


def server(n):
    srv = socketserver.ForkingTCPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    t.start()
    try:
        for _ in range(n):
            with socket.create_connection(srv.server_address) as c:
                c.sendall(b"go")
                print(c.recv(16).decode(), flush=True)
    finally:
        srv.shutdown()
        t.join()
        srv.server_close()


def early_work():
    spin(0.01)


def late_work():
    spin(0.3)


def late():
    parent = os.getpid()
    early = os.fork()
    if early == 0:
        while os.getppid() == parent:   # never outlives its parent
            early_work()
            time.sleep(0.04)
        os._exit(0)
    say_ready(early=early)
    try:
        for _ in range(120):
            time.sleep(0.5)
            pid = os.fork()
            if pid == 0:
                late_work()
                os._exit(0)
            os.waitpid(pid, 0)
    finally:
        os.kill(early, 9)
        os.waitpid(early, 0)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "pool":
        pool(sys.argv[2], sys.argv[3])
    elif what == "chain":
        chain(int(sys.argv[2]))
    elif what == "brief":
        run_brief(int(sys.argv[2]), float(sys.argv[3]))
    elif what == "storm":
        storm(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif what == "late":
        late()
    elif what == "twins":
        twins(int(sys.argv[2]))
    elif what == "server":
        server(int(sys.argv[2]))
