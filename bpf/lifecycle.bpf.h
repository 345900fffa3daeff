// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Process lifecycle: exec, fork and exit reported to user space, and the
 * process tree --subprocesses follows.
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_LIFECYCLE_H
#define PBP_BPF_LIFECYCLE_H

static __always_inline void proc_event_flags(__u32 kind, __u32 pid, __u32 parent, __u64 flags)
{
	struct pbp_proc_event ev = { .kind = kind, .pid = pid, .parent = parent };

	/* In the exec tracepoint the name is the new program's already. */
	if (kind == PBP_EV_EXEC)
		bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	bpf_ringbuf_output(&procevents, &ev, sizeof(ev), flags);
}

static __always_inline void proc_event(__u32 kind, __u32 pid, __u32 parent)
{
	proc_event_flags(kind, pid, parent, 0);
}

/*
 * Whole-host mode reports every exec on the node, and a node running builds
 * or cron jobs execs hundreds of times a second: each woke the agent, most
 * of its CPU with nothing to profile. An exec of a process that is not a
 * target wakes user space at most once per EXEC_GAP_NS per CPU; the others
 * wait in the ring for that wakeup or the loop's own, user space's first
 * look at a new program being some tens of ms after it anyway.
 */
#define EXEC_GAP_NS (100 * 1000000ull)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exec_woke SEC(".maps");

static __always_inline __u64 exec_wake_flags(void)
{
	__u32 k = 0;
	__u64 now = bpf_ktime_get_ns(), *last = bpf_map_lookup_elem(&exec_woke, &k);

	if (last && now - *last < EXEC_GAP_NS)
		return BPF_RB_NO_WAKEUP;
	if (last)
		*last = now;
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBP_MAX_FOLLOWED);
	__type(key, __u32);
	__type(value, __u32);
} followed SEC(".maps");

static __always_inline bool is_followed(__u32 tgid)
{
	return follow && bpf_map_lookup_elem(&followed, &tgid) != NULL;
}

/*
 * A followed process's new process. After fork the child's memory is a copy
 * of its parent's: a Python parent's layout is the child's, so its entry is
 * copied and the child's first sample is walked like its parent's (its one
 * thread, not registered yet, is found by find_tstate()).
 */
static __always_inline void follow_child(__u32 ptgid, struct task_struct *child)
{
	__u32 tgid, tid;
	struct pbp_proc *p;

	if (!task_ids(child, &tgid, &tid))
		return;
	if (bpf_map_update_elem(&followed, &tgid, &ptgid, BPF_ANY)) {
		stat_inc(PBP_STAT_FOLLOW_FULL);
		return;
	}
	p = bpf_map_lookup_elem(&procs, &ptgid);
	if (p)
		bpf_map_update_elem(&procs, &tgid, p, BPF_ANY);
	proc_event(PBP_EV_FORK, tgid, ptgid);
}

/*
 * Whole-host mode: a target that forks without exec (a prefork server's
 * workers, multiprocessing's fork) makes a new Python process no exec
 * event would show: user space looks at it as at an exec.
 */
static __always_inline void target_forked(__u32 ptgid, struct task_struct *child)
{
	__u32 tgid, tid;

	if (task_ids(child, &tgid, &tid))
		proc_event(PBP_EV_FORK, tgid, ptgid);
}

#endif /* PBP_BPF_LIFECYCLE_H */
