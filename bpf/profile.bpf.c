// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Sampler: a perf-event program on every CPU. For a thread of a target
 * process it copies the Python frame chain at the sample instant, so the
 * stack user space names is the one that was running.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "pybpfprof.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* ------------------------------------------------------------ knobs */

/*
 * Set by user space before the object loads (.rodata, user/sample/sampler.c):
 * the verifier sees them as constants, so a part that is off costs nothing.
 */

/*
 * Wall and gil modes: a thread's stack is copied as it leaves the CPU. Off
 * CPU it cannot change, so a tick that finds its switch count unchanged
 * uses the copy and reads nothing. Only sleeps are copied: a tick mostly
 * falls in those, while a GIL wait or a preemption usually ends before the
 * next tick and would make the copy wasted work in the target. What a tick
 * needs is the last switch before it, so the budget is a rate with room for
 * a burst: one copy per snap_gap_ns (a tick; 0: never) on average,
 * SNAP_BURST in a row. A thread so pays at most what a busy thread pays
 * the sampler; one that sleeps more often than that is read at the tick.
 */
const volatile __u64 snap_gap_ns = 0;
#define SNAP_BURST 2

/*
 * pybpfprof in a PID namespace of its own (a sidecar container, a pod
 * without hostPID) knows processes by the ids of that namespace, and so
 * must every id this side looks up or reports. ns_inum is its inode number;
 * 0 when it is the initial namespace, whose ids task->pid and ->tgid are.
 * Its depth is found from the first task seen in it, and never changes.
 */
const volatile __u32 ns_inum = 0;

/*
 * --native: bytes of the user stack copied with each sample (0: none, the
 * default: then nothing below costs a thing), and whether the frames that
 * entered the evaluation loop are marked (struct pbp_sample's .entries).
 */
const volatile __u32 ustack_bytes = 0;
const volatile bool entry_marks = false;
/* --native=fp: the kernel's frame-pointer walk instead of the copy (ustack_bytes unused). */
const volatile bool ustack_fp = false;
/*
 * --native, --native-leaf: each sample carries the thread's user registers
 * (where it was in native code). Nothing else reads them, so without these
 * a sample copies none.
 */
const volatile bool want_regs = false;

/*
 * --kernel: a sample of a thread in the kernel (a system call, a fault),
 * and a switch-out copy of a sleeping one, carry the id of its kernel
 * stack. The kernel walks it and keeps each distinct stack once in
 * "kstacks", so a sample pays a hash and a compare, not a copy. Off by
 * default; user space then sizes the map to one entry.
 */
const volatile bool kernel_stacks = false;

/*
 * A whole host in cpu mode names a new thread a little later anyway, with
 * the others its process started meanwhile (target.c, names_late): a
 * process starting threads all the time would wake it at each.
 */
const volatile bool wake_new_threads = true;

/*
 * The kernel throttles perf events on the cost of their interrupts, but
 * not for cpu-clock events, whose hrtimer runs the program whatever it
 * costs: at a high rate the CPUs then do nothing else. So each CPU's
 * walks (samples and switch-out copies) get walk_budget_ns in every
 * PBP_BUDGET_WINDOW_NS, measured here; past it, work waits for the next
 * window and is counted. User space caps the interrupt rate itself.
 */
const volatile __u64 walk_budget_ns = 0;   /* 0: no limit */

/*
 * User space wakes on its own timer and drains the ring, so a record asks
 * for a wakeup only once the ring holds more than wake_bytes: a host with
 * many busy CPUs is drained before it loses samples, and nothing else
 * pays an irq_work for a wakeup nobody waits for.
 */
const volatile __u64 wake_bytes = 4 << 20;
/* How often a CPU asks how full the ring is: after this many bytes of its records (record.bpf.h). */
const volatile __u64 wake_check_bytes = 64 << 10;

/* Whole-host mode: every exec may start a Python process; user space checks it. */
const volatile bool all_execs = false;
/* Whole-host mode with --comm: a process renamed (prctl, setproctitle) may match it now. */
const volatile bool renames = false;
/* ns in a clock tick of /proc/PID/stat's starttime (1e9 / sysconf(_SC_CLK_TCK)) */
const volatile __u64 ns_per_tick = 10000000;
/* wall and gil modes: a target's new threads are reported (PBP_EV_THREAD). */
const volatile bool thread_events = false;

/*
 * --subprocesses: the process tree under the launched command (or the -p
 * processes). User space seeds the roots; a process forked by a member
 * joins at once, before it runs, so that neither its samples nor its own
 * children can be missed; it leaves at its exit. The value is the parent.
 * The bound is on the tree's live processes: a child that does not fit is
 * counted (PBP_STAT_FOLLOW_FULL) and not followed.
 */
const volatile bool follow = false;

/*
 * Wall and gil modes: the ticks' schedule, set by user space when it starts
 * them (tick_base_ns + k * tick_period_ns, CLOCK_MONOTONIC): a switch
 * records the thread's state at the latest tick instant before it
 * (tick_cross). 0: no ticks, nothing recorded. Written at run time: .bss.
 */
volatile __u64 tick_base_ns = 0;
volatile __u64 tick_period_ns = 0;

/* The parts, each a concern: helpers and maps, no program. */
#include "maps.bpf.h"
#include "walk.bpf.h"
#include "record.bpf.h"
#include "native.bpf.h"
#include "find.bpf.h"
#include "sched.bpf.h"
#include "lifecycle.bpf.h"

/* ------------------------------------------------------------ programs */

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, buf = BUF_SAMPLE;
	struct pbp_proc *p;
	struct pbp_thread *t;
	struct pbp_sample *s;
	struct cpu_budget *b;
	__u64 now;
	bool fresh = false;

	stat_inc(PBP_STAT_FIRED);
	if (ns_inum && !task_ids(bpf_get_current_task_btf(), &tgid, &tid))
		return 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	stat_inc(PBP_STAT_TAKEN);
	now = bpf_ktime_get_ns();
	b = budget_open(now);
	s = bpf_map_lookup_elem(&scratch, &buf);
	if (!b || !s)
		return 0;
	start_record(s, tgid, tid, now, 0, 0, 0);
	if (want_regs || kernel_stacks)
		user_regs(s, ctx);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t && t->tgid == tgid) {  /* a tid reused by another process is not this thread */
		s->tstate = t->tstate;
	} else {
		/* User space must learn of this thread: wake it, once (unless it names threads late). */
		fresh = wake_new_threads && first_sight(thread_key(tid));
		s->tstate = find_tstate(p, tid, s->ts);
		s->flags |= s->tstate ? PBP_F_TSTATE_FOUND : PBP_F_NO_TSTATE;
		stat_inc(s->tstate ? PBP_STAT_TSTATE_FOUND : PBP_STAT_NO_TSTATE);
	}
	if (s->tstate)
		fresh |= walk(s, p, s->tstate, BUF_SAMPLE);
	read_gil(s, p);
	if (s->flags & PBP_F_TRUNCATED)
		stat_inc(PBP_STAT_TRUNCATED);
	if (s->flags & PBP_F_FAULT)
		stat_inc(PBP_STAT_FAULTED);
	copy_ustack(s, ctx);
	if (output(s, fresh) == 0)
		stat_inc(PBP_STAT_DELIVERED);
	else
		stat_inc(PBP_STAT_LOST);
	budget_close(b, now);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns(), tstate = 0;
	struct pbp_tstate *st = NULL;
	__u32 tgid, tid;

	if (task_ids(prev, &tgid, &tid))
		st = tstate_of(tgid, tid, &tstate);
	if (st) {
		tick_cross(st, now);
		st->off_reason = off_reason(st, prev, tgid, prev_state);
		switch_note(st, now, 0);
		/* Short waits (GIL, preemption) are left to the tick: most end before one. */
		if (st->off_reason == PBP_OFF_SLEEP || st->off_reason == PBP_OFF_DISK)
			snapshot(ctx, st, tgid, tid, tstate, now);
	}
	st = NULL;
	if (task_ids(next, &tgid, &tid))
		st = tstate_of(tgid, tid, &tstate);
	if (st) {
		/* off_reason is kept: it says where the thread was until this instant. */
		tick_cross(st, now);
		switch_note(st, now, 1);
	}
	return 0;
}

/*
 * A sleeping thread woken is ready to run from this instant, though it may
 * wait for a CPU before its switch in: off CPU and runnable from here, as a
 * preempted one is. A GIL waiter stays a GIL waiter (woken to retake the GIL,
 * it has not got it yet); a thread not seen leaving the CPU (woken before it
 * switched out) has nothing to change.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	__u64 now, tstate = 0;
	struct pbp_tstate *st = NULL;
	__u32 tgid, tid;

	if (task_ids(p, &tgid, &tid))
		st = tstate_of(tgid, tid, &tstate);
	if (!st || st->oncpu || (st->off_reason != PBP_OFF_SLEEP && st->off_reason != PBP_OFF_DISK &&
				 st->off_reason != PBP_OFF_STOPPED))
		return 0;
	now = bpf_ktime_get_ns();
	tick_cross(st, now);
	st->off_reason = PBP_OFF_RUNNABLE;
	switch_note(st, now, 0);
	return 0;
}

/*
 * A target that execs runs another program: the old layout and thread
 * states mean nothing in it. Forget them before a sample reads the new
 * image with them; user space looks at the new program and comes back.
 * The exec'ing thread is the leader now (tid = tgid); the others are gone.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid, tid, old = (__u32)old_pid;
	bool target;

	if (!task_ids(p, &tgid, &tid))
		return 0;
	target = bpf_map_lookup_elem(&procs, &tgid) != NULL;
	if (target) {
		bpf_map_delete_elem(&procs, &tgid);
		bpf_map_delete_elem(&threads, &tid);
		/* old_pid is the initial namespace's; a translated one is not known here */
		if (!ns_inum)
			bpf_map_delete_elem(&threads, &old);
	}
	if (target || is_followed(tgid))
		proc_event(PBP_EV_EXEC, tgid, 0);
	else if (all_execs)
		proc_event_flags(PBP_EV_EXEC, tgid, 0, exec_wake_flags());
	return 0;
}

/*
 * wall and gil modes count threads that never run, which no sample would
 * reveal: user space reads the thread list again when one starts. With
 * --subprocesses, a followed process's new processes are followed too.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid, tid;

	if (!task_ids(parent, &tgid, &tid))
		return 0;
	if (child->tgid != parent->tgid) {
		if (is_followed(tgid))
			follow_child(tgid, child);
		else if (all_execs && bpf_map_lookup_elem(&procs, &tgid))
			target_forked(tgid, child);
	} else if (thread_events && bpf_map_lookup_elem(&procs, &tgid)) {
		proc_event(PBP_EV_THREAD, tgid, 0);
	}
	return 0;
}

/*
 * -a --comm judges a process by its name: one that names itself later
 * (prctl(PR_SET_NAME), setproctitle) is looked at again, with the new
 * name (the tracepoint comes before the task's comm is written). Only a
 * main thread's name is the process's (/proc/PID/comm), and a target is
 * profiled already. Loaded only for -a --comm.
 */
SEC("tp_btf/task_rename")
int BPF_PROG(on_rename, struct task_struct *task, const char *comm)
{
	struct pbp_proc_event ev = { .kind = PBP_EV_RENAME };
	__u32 tgid, tid;

	if (!renames || !task_ids(task, &tgid, &tid) || tid != tgid || bpf_map_lookup_elem(&procs, &tgid))
		return 0;
	ev.pid = tgid;
	/* which process renamed: -a's skip of a pid holds for its process only, told without /proc */
	ev.start = (__u32)(BPF_CORE_READ(task, start_boottime) / (ns_per_tick ? ns_per_tick : 1));
	bpf_probe_read_kernel_str(ev.comm, sizeof(ev.comm), comm);
	bpf_ringbuf_output(&procevents, &ev, sizeof(ev), exec_wake_flags());
	return 0;
}

/*
 * -a: a target's labels (container, pod) come from its cgroup, which
 * changes only when it is moved; user space makes them again when told,
 * and reads nothing for them otherwise. Attached only for -a.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(on_cgroup_move, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup)
{
	__u32 tgid, tid;

	if (task_ids(task, &tgid, &tid) && bpf_map_lookup_elem(&procs, &tgid))
		proc_event(PBP_EV_CGROUP, tgid, 0);
	return 0;
}

/*
 * A thread's entry goes with it, so a reused tid never inherits its state;
 * the process's own entry goes with its last thread (signal->live reaches 0
 * before this tracepoint; that works on kernels whose tracepoint lacks the
 * group_dead argument too).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tid, tgid;
	struct pbp_thread *t;
	bool gone = false;

	if (!task_ids(p, &tgid, &tid))
		return 0;
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t && t->tgid == tgid)
		bpf_map_delete_elem(&threads, &tid);
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (bpf_map_lookup_elem(&procs, &tgid)) {
		bpf_map_delete_elem(&procs, &tgid);
		gone = true;
	}
	if (is_followed(tgid)) {
		bpf_map_delete_elem(&followed, &tgid);
		gone = true;
	}
	if (gone)
		proc_event(PBP_EV_EXIT, tgid, 0);
	return 0;
}
