// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A sample record: ids in our PID namespace, its header, and the ring that
 * takes it to user space (and when that wakes user space).
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_RECORD_H
#define PBP_BPF_RECORD_H

/* ns_inum's depth, found from the first task seen in it (our_depth). */
__u32 ns_depth = 0;                     /* 0: not known yet, else depth + 1 */
#define MAX_NS_DEPTH 33                 /* the kernel nests 32 levels below the initial one */

/*
 * A program that makes code all the time (exec, eval) would wake user space
 * at every sample: a first sight wakes it at most once per FRESH_GAP_NS per
 * CPU, which bounds how long a new name waits to be read.
 */
#define FRESH_GAP_NS (2 * 1000000ull)

/*
 * Per CPU: when a first sight last woke user space, and the bytes this CPU
 * put on the ring since it last asked how full the ring is. The question
 * is a helper call, so it is asked once per wake_check_bytes of records,
 * not at every sample: with every CPU just short of its share, the ring
 * holds at most ncpu * wake_check_bytes (a quarter of wake_bytes, as user
 * space sets it) past wake_bytes before a wakeup is asked for.
 */
struct ring_note {
	__u64 fresh_woke;
	__u64 unasked;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring_note);
} ring_notes SEC(".maps");

static __always_inline bool wake_due(__u64 size, bool fresh, __u64 now)
{
	__u32 k = 0;
	struct ring_note *r = bpf_map_lookup_elem(&ring_notes, &k);

	if (!r)
		return false;
	if (fresh && now - r->fresh_woke >= FRESH_GAP_NS) {
		r->fresh_woke = now;
		return true;
	}
	r->unasked += size;
	if (r->unasked < wake_check_bytes)
		return false;
	r->unasked = 0;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > wake_bytes;
}

static __always_inline long output(struct pbp_sample *s, bool fresh)
{
	__u64 size = __builtin_offsetof(struct pbp_sample, frames) +
		     (__u64)(s->nframes & (PBP_MAX_FRAMES - 1)) * sizeof(struct pbp_frame);

	if (s->nframes == PBP_MAX_FRAMES)
		size = sizeof(*s);
	return bpf_ringbuf_output(&events, s, size,
				  wake_due(size, fresh, s->ts) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* The id a struct pid has at depth d, if that level is our namespace; else 0. */
static __always_inline __u32 nr_at(struct pid *pid, __u32 d)
{
	struct upid up;
	unsigned long at = (unsigned long)pid + bpf_core_field_offset(struct pid, numbers) +
			   (unsigned long)d * bpf_core_type_size(struct upid);

	if (d >= MAX_NS_DEPTH || bpf_probe_read_kernel(&up, sizeof(up), (void *)at))
		return 0;
	return BPF_CORE_READ(up.ns, ns.inum) == ns_inum ? (__u32)up.nr : 0;
}

/* Depth of our namespace among a task's, -1 when the task is not in it or below. */
static __always_inline int our_depth(struct pid *pid)
{
	__u32 top = BPF_CORE_READ(pid, level);

	if (ns_depth)
		return ns_depth - 1 <= top ? (int)ns_depth - 1 : -1;
	for (__u32 d = 0; d < MAX_NS_DEPTH && d <= top; d++)
		if (nr_at(pid, d)) {
			ns_depth = d + 1;
			return (int)d;
		}
	return -1;
}

/* A task's process and thread ids as user space knows them; false when it cannot see the task. */
static __always_inline bool task_ids(struct task_struct *task, __u32 *tgid, __u32 *tid)
{
	struct pid *pid;
	int d;

	if (!ns_inum) {
		*tgid = task->tgid;
		*tid = task->pid;
		return true;
	}
	pid = BPF_CORE_READ(task, thread_pid);
	d = pid ? our_depth(pid) : -1;
	if (d < 0)
		return false;
	*tid = nr_at(pid, (__u32)d);
	*tgid = nr_at(BPF_CORE_READ(task, group_leader, thread_pid), (__u32)d);
	return *tid && *tgid;
}

/* The record's header, before the walk fills in frames and flags. */
static __always_inline void start_record(struct pbp_sample *s, __u32 tgid, __u32 tid, __u64 ts,
					 __u64 tstate, __u16 flags, __u64 switches)
{
	s->ts = ts;
	s->tgid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = flags;
	s->nframes = 0;
	s->resume = 0;
	s->switches = switches;
	s->tstate = tstate;
	s->task = 0;
	s->ip = s->sp = s->bp = 0;
	s->entries[0] = s->entries[1] = 0;
	s->kstack = 0;
	s->pad = 0;
}

#endif /* PBP_BPF_RECORD_H */
