// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Finding a thread's Python thread state the first time it is sampled:
 * the interpreters' thread lists walked, bounded, and remembered.
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_FIND_H
#define PBP_BPF_FIND_H

#define FIND_MAX 1024          /* thread states and interpreters looked at, at most */
/*
 * A thread with no Python state (a native worker: BLAS, a C library's pool)
 * would pay for a walk at every sample: after a walk that finds nothing it
 * is not walked again for this long. A Python thread still starting is
 * registered by user space meanwhile, at its first sample.
 */
#define FIND_AGAIN_NS (100 * 1000000ull)
#define NOTFOUND_MAX 16384           /* threads remembered as having no Python state */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NOTFOUND_MAX);
	__type(key, __u32);
	__type(value, __u64);
} notfound SEC(".maps");

struct find_ctx {
	__u64 interp, ts, self, found;
	__u16 is_threads_head, is_next, ts_next, ts_thread_id;
};

static long find_step(__u32 i, void *vctx)
{
	struct find_ctx *c = vctx;
	__u64 id = 0;

	if (!c->ts) {
		/* This interpreter's list is done (or not begun): on to the next one. */
		if (!c->interp ||
		    read_ptr(&c->ts, c->interp + c->is_threads_head) ||
		    read_ptr(&c->interp, c->interp + c->is_next))
			return 1;
		return 0;
	}
	if (read_ptr(&id, c->ts + c->ts_thread_id))
		return 1;
	/*
	 * Up to 3.11 a state just made holds its starter's id until its own
	 * thread runs; states are added at the head, so the starter's own,
	 * older state comes later: the last match wins.
	 */
	if (id == c->self)
		c->found = c->ts;
	if (read_ptr(&c->ts, c->ts + c->ts_next))
		return 1;
	return 0;
}

/*
 * The current thread's Python state, for a thread user space has not
 * registered. CPython keeps PyThread_get_thread_ident(), which is
 * pthread_self(), in tstate->thread_id on 3.8-3.14; on x86-64 glibc and musl
 * pthread_self() is the thread's fs base. 0 if not found. Not inlined: its
 * stack goes with it, so both ways into the frame walk verify as one.
 */
static __noinline __u64 find_tstate(const struct pbp_proc *p, __u32 tid, __u64 now)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *task = bpf_get_current_task_btf();
	struct find_ctx c = {
		.is_threads_head = p->is_threads_head, .is_next = p->is_next,
		.ts_next = p->ts_next, .ts_thread_id = p->ts_thread_id,
	};
	__u64 *last = bpf_map_lookup_elem(&notfound, &tid);

	if (last && now - *last < FIND_AGAIN_NS)
		return 0;
	if (!p->interp_head || read_ptr(&c.interp, p->interp_head))
		return 0;
	c.self = task->thread.fsbase;
	if (c.self)
		bpf_loop(FIND_MAX, find_step, &c, 0);
	if (!c.found)
		bpf_map_update_elem(&notfound, &tid, &now, BPF_ANY);
	return c.found;
#else
	/* Elsewhere the TLS base is not pthread_self() as simply: user space finds the thread. */
	(void)p, (void)tid, (void)now;
	return 0;
#endif
}

#endif /* PBP_BPF_FIND_H */
