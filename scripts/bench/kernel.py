"""What the kernel says: CPU time and memory of a task, the BPF program's run
statistics, bare perf timers."""

import ctypes
import os
import platform
import struct
import time


def task_cpu_ns(pid):
    """CPU time of every thread of pid, ns (schedstat); None when gone."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError):
        return None
    return total


def vm_hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# ---------------------------------------------------------------- BPF statistics

SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
BPF_PROG_GET_FD_BY_ID = 13
BPF_PROG_TYPE_PERF_EVENT = 7
_libc = ctypes.CDLL(None, use_errno=True)


class BpfStats(object):
    """kernel.bpf_stats_enabled=1 while in use; restored after."""

    def __init__(self):
        self.old = None

    def __enter__(self):
        try:
            with open("/proc/sys/kernel/bpf_stats_enabled") as f:
                self.old = f.read().strip()
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write("1")
        except OSError:
            self.old = None
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(self.old)


def fdinfo(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k.strip()] = v.strip()
    except OSError:
        pass
    return out


def grab_sample_prog(pid, timeout=10.0):
    """An fd of our own on pid's perf_event BPF program, so that its run
    statistics outlive pid. None if it never showed up."""
    if SYS_BPF is None:
        return None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            return None
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf-prog":
                    continue
            except OSError:
                continue
            info = fdinfo("/proc/%d/fdinfo/%s" % (pid, fd))
            if info.get("prog_type") != str(BPF_PROG_TYPE_PERF_EVENT) or "prog_id" not in info:
                continue
            attr = ctypes.create_string_buffer(struct.pack("=III", int(info["prog_id"]), 0, 0), 128)
            own = _libc.syscall(SYS_BPF, BPF_PROG_GET_FD_BY_ID, attr, 128)
            return own if own >= 0 else None
        time.sleep(0.005)
    return None


PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())


def online_cpus():
    out = []
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            a, _, b = part.partition("-")
            out += range(int(a), int(b or a) + 1)
    return out


def timer_events(hz):
    """cpu-clock perf events sampling at hz on every online CPU, as pybpfprof
    opens them, but with no BPF program and no buffer: only the interrupt."""
    fds = []
    for cpu in online_cpus():
        # struct perf_event_attr: type, size, config, sample_period; the rest zero.
        attr = ctypes.create_string_buffer(struct.pack("=IIQQ", 1, 128, 0, 10**9 // hz), 128)
        fd = _libc.syscall(PERF_EVENT_OPEN, attr, -1, cpu, -1, 8)     # PERF_FLAG_FD_CLOEXEC
        if fd < 0:
            for f in fds:
                os.close(f)
            raise OSError(ctypes.get_errno(), "perf_event_open")
        fds.append(fd)
    return fds


def perf_links(pid):
    """Perf-event BPF links pid holds: one per CPU once its sampler is attached."""
    n = 0
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return -1
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf_link":
                continue
        except OSError:
            continue
        if fdinfo("/proc/%d/fdinfo/%s" % (pid, fd)).get("link_type") == "perf":
            n += 1
    return n


def prog_stats(fd):
    info = fdinfo("/proc/self/fdinfo/%d" % fd)
    try:
        return int(info["run_time_ns"]), int(info["run_cnt"])
    except (KeyError, ValueError):
        return None


# ---------------------------------------------------------------- pybpfprof runs
