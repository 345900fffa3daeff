// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Thread state at a switch: why a thread left the CPU (sleep, disk, futex,
 * stopped) and the copy of its stack taken then, for wall and gil modes.
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_SCHED_H
#define PBP_BPF_SCHED_H

#define TASK_INTERRUPTIBLE_ 0x1
#define TASK_UNINTERRUPTIBLE_ 0x2
#define TASK_STOPPED_ 0x4       /* __TASK_STOPPED: SIGSTOP, SIGTSTP, ... */
#define TASK_TRACED_ 0x8        /* __TASK_TRACED: held by a tracer */
#define TASK_NOLOAD_ 0x400

static __always_inline struct pbp_tstate *tstate_of(__u32 tgid, __u32 tid, __u64 *tstate)
{
	struct pbp_thread *t = bpf_map_lookup_elem(&threads, &tid);
	__u32 slot;

	if (!t || t->tgid != tgid)
		return NULL;
	slot = t->slot;
	*tstate = t->tstate;
	return bpf_map_lookup_elem(&tstates, &slot);
}

/*
 * Before a switch changes the thread's state: if a tick instant passed since
 * its last switch, its state at that instant is the present one.
 */
static __always_inline void tick_cross(struct pbp_tstate *st, __u64 now)
{
	__u64 base = tick_base_ns, period = tick_period_ns, last = 0, t;

	if (!period || now < base)
		return;
	t = base + (now - base) / period * period;      /* the latest tick instant <= now */
	if (st->switches)
		last = st->recent[(st->switches - 1) % PBP_SWITCH_RING] >> PBP_SWITCH_NS_SHIFT;
	if (last < t) {
		st->tick_ns = t;
		st->tick_oncpu = st->oncpu;
		st->tick_reason = st->off_reason;
	}
}

/*
 * A switch of the thread: its state after it, and the instant into the
 * ring, which is written before the count moves on (user space copies the
 * ring between two reads of the count).
 */
static __always_inline void switch_note(struct pbp_tstate *st, __u64 now, __u8 oncpu)
{
	__u32 i = st->switches % PBP_SWITCH_RING;

	st->oncpu = oncpu;
	if (i < PBP_SWITCH_RING)
		st->recent[i] = now << PBP_SWITCH_NS_SHIFT | (oncpu ? PBP_SWITCH_ONCPU : 0) |
				(st->off_reason & PBP_SWITCH_REASON);
	asm volatile("" ::: "memory");
	st->switches++;
}

#if defined(__TARGET_ARCH_x86)
#define NR_FUTEX 202
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define NR_FUTEX 98
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
#endif

/*
 * The futex a sleeping task waits on. The task is inside its syscall, so
 * its saved user registers hold the syscall number and first argument: no
 * syscall hook is needed, and nothing runs for other tasks.
 */
static __always_inline __u64 futex_of(struct task_struct *task)
{
#ifdef NR_FUTEX
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (regs && SYSCALL_NR(regs) == NR_FUTEX)
		return PT_REGS_PARM1_CORE_SYSCALL(regs);
#endif
	return 0;
}

/*
 * A futex call whose address lies inside the GIL struct is a GIL wait, on
 * every version: asleep in it, or preempted inside it (a waiter woken to
 * retake the GIL, or one handing it over, has not got it yet).
 */
static __always_inline __u8 off_reason(struct pbp_tstate *st, struct task_struct *task, __u32 tgid,
				       unsigned int state)
{
	struct pbp_proc *p;
	bool gil;

	if (state & (TASK_STOPPED_ | TASK_TRACED_))
		return PBP_OFF_STOPPED;         /* asleep only in that nothing runs it until SIGCONT */
	if ((state & TASK_UNINTERRUPTIBLE_) && !(state & TASK_NOLOAD_)) {
		st->futex_addr = 0;
		return PBP_OFF_DISK;
	}
	st->futex_addr = futex_of(task);
	p = bpf_map_lookup_elem(&procs, &tgid);
	gil = p && st->futex_addr >= p->gil_lo && st->futex_addr < p->gil_hi;
	if (gil)
		return PBP_OFF_GIL;
	return state == 0 ? PBP_OFF_RUNNABLE : PBP_OFF_SLEEP;
}

/*
 * The stack of the thread leaving the CPU, which is still current here, so
 * its memory is the one bpf_probe_read_user sees. User space keeps it with
 * the switch count: while that count stands, the thread has not run since.
 */
static __always_inline void snapshot(void *ctx, struct pbp_tstate *st, __u32 tgid, __u32 tid,
				     __u64 tstate, __u64 now)
{
	__u32 buf = BUF_SWITCH;
	struct pbp_proc *p;
	struct pbp_sample *s;
	struct cpu_budget *b;
	__u64 due = st->snap_due > now ? st->snap_due : now;
	bool fresh;

	if (!snap_gap_ns || !tstate || due - now >= SNAP_BURST * snap_gap_ns)
		return;
	p = bpf_map_lookup_elem(&procs, &tgid);
	s = bpf_map_lookup_elem(&scratch, &buf);
	if (!p || !s)
		return;
	b = budget_open(now);   /* none left: the tick reads the stack instead */
	if (!b)
		return;
	st->snap_due = due + snap_gap_ns;
	start_record(s, tgid, tid, now, tstate, PBP_F_SWITCH_OUT, st->switches);
	fresh = walk(s, p, tstate, BUF_SWITCH);
	/*
	 * --native: where in its own code it went to sleep, kept with the
	 * Python stack for the ticks that follow (the wall mode's sleeping and
	 * disk-waiting threads). Its user registers are the ones saved on entry;
	 * it is still current, so fp's walk and dwarf's copy read its stack.
	 */
	if (ustack_bytes || ustack_fp) {
		saved_regs(s);
		copy_ustack(s, ctx);
	}
	/* Still current: its kernel stack is where it blocks (do_select, futex_wait). */
	if (kernel_stacks)
		kernel_stack(s, ctx);
	if (output(s, fresh) == 0)
		stat_inc(PBP_STAT_SNAPPED);
	else
		stat_inc(PBP_STAT_SNAP_LOST);
	budget_close(b, now);
}

#endif /* PBP_BPF_SCHED_H */
