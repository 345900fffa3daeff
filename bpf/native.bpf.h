// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Native and kernel stacks: --kernel's stack ids, the user registers, and
 * --native's copy of the user stack or the kernel's frame-pointer walk.
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_NATIVE_H
#define PBP_BPF_NATIVE_H

/*
 * --kernel: the current task's kernel stack, by its id in "kstacks". ctx is
 * the program's own: the perf event's registers, or the tracepoint's.
 * A slot that holds another stack is not taken over (-EEXIST): a stack's
 * id then stays what user space read for it. Counted either way.
 */
static __always_inline void kernel_stack(struct pbp_sample *s, void *ctx)
{
	long id = bpf_get_stackid(ctx, &kstacks, 0);

	s->kstack = (__s32)id;
	s->flags |= PBP_F_KSTACK;
	if (id >= 0)
		stat_inc(PBP_STAT_KSTACK);
	else if (id == -17)     /* EEXIST */
		stat_inc(PBP_STAT_KSTACK_COLLIDED);
	else
		stat_inc(PBP_STAT_KSTACK_FAILED);
}

/* ------------------------------------------------------------ user registers */

/*
 * The perf context allows only whole 8-byte loads at constant offsets from
 * itself (cs is a u16 inside one): volatile, so that the compiler neither
 * narrows them nor shares the address arithmetic with the other path.
 */
#define CTX_WORD(r, f) (*(volatile __u64 *)((char *)(r) + __builtin_offsetof(struct pt_regs, f)))

#if defined(__TARGET_ARCH_x86)
/* The sample interrupted user mode: its registers are the thread's own. */
#define REGS_USER(r) ((CTX_WORD(r, cs) & 3) == 3)
#define CTX_COPY(s, r) ((s)->ip = CTX_WORD(r, ip), (s)->sp = CTX_WORD(r, sp), (s)->bp = CTX_WORD(r, bp))
#define REGS_COPY(s, r) ((s)->ip = (r)->ip, (s)->sp = (r)->sp, (s)->bp = (r)->bp)
#elif defined(__TARGET_ARCH_arm64)
#define REGS_USER(r) ((CTX_WORD(r, pstate) & 0xf) == 0)
#define CTX_COPY(s, r) ((s)->ip = CTX_WORD(r, pc), (s)->sp = CTX_WORD(r, sp), \
			(s)->bp = CTX_WORD(r, regs[29]))
#define REGS_COPY(s, r) ((s)->ip = (r)->pc, (s)->sp = (r)->sp, (s)->bp = (r)->regs[29])
#endif

/*
 * Where the thread was in its own code: the perf event's registers when it
 * interrupted user mode, else (in a syscall, a fault) the user registers
 * the kernel saved on entry. A few loads, for the innermost native frame
 * user space names: only when asked (want_regs: --native, --native-leaf).
 */
static __always_inline void saved_regs(struct pbp_sample *s)
{
#ifdef REGS_USER
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!r)
		return;
	REGS_COPY(s, r);
	if (s->ip)
		s->flags |= PBP_F_REGS;
#endif
}

static __always_inline void user_regs(struct pbp_sample *s, struct bpf_perf_event_data *ctx)
{
#ifdef REGS_USER
	struct pt_regs *r = (struct pt_regs *)&ctx->regs;

	if (!REGS_USER(r)) {
		if (kernel_stacks)
			kernel_stack(s, ctx);
		if (want_regs)
			saved_regs(s);
		return;
	}
	if (!want_regs)
		return;
	CTX_COPY(s, r);
	if (s->ip)
		s->flags |= PBP_F_REGS;
#endif
}

/*
 * --native: the top of the user stack, from sp up, on the ring just before
 * the sample, for user space to unwind. Read straight into the ring's
 * record (a copy through a map would double the cost, which grows with the
 * bytes). A stack whose end is nearer than ustack_bytes (a thread's first
 * frames) gets half as much, twice; the record's size stays the same.
 */
static long vma_end_of(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(__u64 *)data = vma->vm_end;
	return 0;
}

/*
 * --native=fp: the kernel walks the user stack's frame pointers itself
 * (perf's callchain code: .ip, then each frame's saved return address) into
 * a record an eighth of the copy's size; nothing is left to unwind. A chain
 * through code built without frame pointers stops or goes astray there.
 */
static __always_inline void walk_ustack_fp(struct pbp_sample *s, void *ctx)
{
	const __u32 size = __builtin_offsetof(struct pbp_ustack, data) + PBP_UADDRS_MAX * 8;
	struct pbp_ustack *u;
	long n;

	u = bpf_ringbuf_reserve(&events, size, 0);
	if (!u)
		return;
	n = bpf_get_stack(ctx, u->data, PBP_UADDRS_MAX * 8, BPF_F_USER_STACK);
	u->magic = PBP_UADDRS_MAGIC;
	u->ts = s->ts;
	u->tid = s->tid;
	u->len = n > 0 ? (__u32)n : 0;
	bpf_ringbuf_submit(u, BPF_RB_NO_WAKEUP);
	s->flags |= PBP_F_USTACK;
}

static __always_inline void copy_ustack(struct pbp_sample *s, void *ctx)
{
	__u64 len = ustack_bytes, end = 0;
	struct pbp_ustack *u;

	if (ustack_fp && (s->flags & PBP_F_REGS)) {
		walk_ustack_fp(s, ctx);
		return;
	}
	if (!len || !(s->flags & PBP_F_REGS))
		return;
	/*
	 * A read past the stack's end faults, and a fault costs more than the
	 * copy (a main thread is often within 8 KiB of its end): stop at it.
	 */
	if (bpf_find_vma(bpf_get_current_task_btf(), s->sp, vma_end_of, &end, 0) == 0 &&
	    end > s->sp && end - s->sp < len)
		len = end - s->sp;
	u = bpf_ringbuf_reserve(&events, sizeof(*u), 0);
	if (!u)
		return;
	if (len > PBP_USTACK_MAX)
		len = PBP_USTACK_MAX;
	for (int i = 0; i < 3; i++, len >>= 1)
		if (bpf_probe_read_user(u->data, len, (const void *)s->sp) == 0)
			break;
	u->magic = PBP_USTACK_MAGIC;
	u->ts = s->ts;
	u->tid = s->tid;
	u->len = len >= 64 ? len : 0;
	bpf_ringbuf_submit(u, BPF_RB_NO_WAKEUP);
	s->flags |= PBP_F_USTACK;
}

#endif /* PBP_BPF_NATIVE_H */
