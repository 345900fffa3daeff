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
__u32 ns_depth = 0;                     /* 0: not known yet, else depth + 1 */
#define MAX_NS_DEPTH 33                 /* the kernel nests 32 levels below the initial one */

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
 * --kernel: a sample of a thread in the kernel (a system call, a fault),
 * and a switch-out copy of a sleeping one, carry the id of its kernel
 * stack. The kernel walks it and keeps each distinct stack once in
 * "kstacks", so a sample pays a hash and a compare, not a copy. Off by
 * default; user space then sizes the map to one entry.
 */
const volatile bool kernel_stacks = false;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, PBP_KSTACK_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PBP_KSTACK_DEPTH * sizeof(__u64));
} kstacks SEC(".maps");

/* Per-CPU scratch slots: one for the sampler, one for switch-out snapshots. */
#define BUF_SAMPLE 0
#define BUF_SWITCH 1

/* Loop bound over frames including skipped shims. */
#define MAX_WALK (PBP_MAX_FRAMES + 32)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pbp_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pbp_thread);
} threads SEC(".maps");

/* An array user space maps into memory: wall mode reads every thread's state with no syscall. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PBP_MAX_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct pbp_tstate);
} tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} procevents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct pbp_sample);
} scratch SEC(".maps");

/*
 * Per-CPU landing space for the span copies. The slack past PBP_SPAN_MAX
 * lets a masked offset plus a u64 load stay in bounds for the verifier.
 */
struct spanbuf {
	__u8 fr[PBP_SPAN_MAX + 8];
	__u8 co[PBP_SPAN_MAX + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct spanbuf);
} spanbufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBP_STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * User space sleeps while samples pile up, and names their frames by reading
 * the target. A process that exits (or frees code) before it wakes takes its
 * names with it: so a sample that shows something never seen before, a code
 * object or a thread, wakes user space at once, while the process is alive.
 * One bit per (process, code object) or thread, by hash: steady state wakes
 * nothing; a collision only leaves a sample to the next regular wakeup.
 */
#define SEEN_WORDS (1 << 15)    /* 2M bits, 256 KiB */

/*
 * A whole host in cpu mode names a new thread a little later anyway, with
 * the others its process started meanwhile (target.c, names_late): a
 * process starting threads all the time would wake it at each.
 */
const volatile bool wake_new_threads = true;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline bool first_sight(__u64 key)
{
	__u64 h = (key ^ key >> 29) * 0xBF58476D1CE4E5B9ull;
	__u32 i = (__u32)(h >> 40) & (SEEN_WORDS - 1);
	__u64 bit = 1ull << (h >> 34 & 63), *w = bpf_map_lookup_elem(&seen, &i);

	/* Read first: a bit already set costs no atomic, no cache line bouncing. */
	if (!w || (*w & bit))
		return false;
	return !(__sync_fetch_and_or(w, bit) & bit);
}

/* A code object by its address and the key against address reuse (struct pbp_frame). */
static __always_inline __u64 code_key(__u32 tgid, const struct pbp_frame *f)
{
	return (f->code ^ (__u64)f->name_lo << 16 ^ f->firstlineno) * 0x9E3779B97F4A7C15ull ^ tgid;
}

/* Code addresses are below 2^48: thread keys cannot meet them before hashing. */
static __always_inline __u64 thread_key(__u32 tid)
{
	return 1ull << 63 | tid;
}

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &i);

	if (v)
		(*v)++;
}

static __always_inline void stat_add(__u32 i, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &i);

	if (v)
		*v += n;
}

/*
 * The kernel throttles perf events on the cost of their interrupts, but
 * not for cpu-clock events, whose hrtimer runs the program whatever it
 * costs: at a high rate the CPUs then do nothing else. So each CPU's
 * walks (samples and switch-out copies) get walk_budget_ns in every
 * PBP_BUDGET_WINDOW_NS, measured here; past it, work waits for the next
 * window and is counted. User space caps the interrupt rate itself.
 */
const volatile __u64 walk_budget_ns = 0;   /* 0: no limit */

struct cpu_budget {
	__u64 start;
	__u64 spent;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_budget);
} budget SEC(".maps");

/* NULL when this CPU has spent its share of the window: skip the work. */
static __always_inline struct cpu_budget *budget_open(__u64 now)
{
	__u32 k = 0;
	struct cpu_budget *b = bpf_map_lookup_elem(&budget, &k);

	if (!b)
		return NULL;
	if (now - b->start >= PBP_BUDGET_WINDOW_NS) {
		b->start = now;
		b->spent = 0;
	}
	if (walk_budget_ns && b->spent >= walk_budget_ns) {
		stat_inc(PBP_STAT_BUDGET);
		return NULL;
	}
	return b;
}

static __always_inline void budget_close(struct cpu_budget *b, __u64 since)
{
	__u64 d = bpf_ktime_get_ns() - since;

	b->spent += d;
	stat_add(PBP_STAT_RUN_NS, d);
}

static __always_inline int read_ptr(__u64 *out, __u64 addr)
{
	return bpf_probe_read_user(out, sizeof(*out), (const void *)addr);
}

static __always_inline __u64 first_frame(const struct pbp_offsets *o, __u64 tstate, int *err)
{
	__u64 frame = 0;

	*err = read_ptr(&frame, tstate + o->ts_frame);
	if (!*err && frame && o->cframe_current != PBP_NOOFF)
		*err = read_ptr(&frame, frame + o->cframe_current);
	return frame;
}

static __always_inline bool is_shim(const struct pbp_offsets *o, __u64 frame, int *err)
{
	__u8 owner = 0;

	if (o->fr_owner == PBP_NOOFF)
		return false;
	*err = bpf_probe_read_user(&owner, 1, (const void *)(frame + o->fr_owner));
	return owner == o->owner_cstack || owner == o->owner_interp;
}

/* The fields of one frame the walk needs. */
struct frame_fields {
	__u64 code;            /* tag bits cleared */
	__u64 instr;
	__u64 prev;
	bool shim;             /* not a Python function's: an entry shim, or 3.14's base frame */
	bool entry;            /* 3.11: the frame's is_entry */
};

struct walk_ctx {
	struct pbp_offsets o;
	__u64 frame;
	__u32 n;
	int err;
	/* Offsets of the fields inside the span buffers, when fr_span / co_span. */
	__u32 r_prev, r_code, r_instr, r_owner;
	__u32 r_line, r_name;
	bool fr_span, co_span;
	__u32 buf;             /* BUF_SAMPLE or BUF_SWITCH */
	__u32 tgid;
	__u64 coro;            /* coro_owner set: the outermost coroutine frame yet */
	bool fresh;            /* a code object never seen before: wake user space */
};

/* Masked offsets stay below PBP_SPAN_MAX whatever user space sent. */
#define SPAN_MASK (PBP_SPAN_MAX - 1)

static __always_inline __u64 span_u64(const __u8 *buf, __u32 rel)
{
	return *(const __u64 *)(buf + (rel & SPAN_MASK));
}

static __always_inline __u32 span_u32(const __u8 *buf, __u32 rel)
{
	return *(const __u32 *)(buf + (rel & SPAN_MASK));
}

/*
 * The span length as the verifier needs it bounded; span_check() has
 * already refused any length this clamp would change.
 */
static __always_inline __u32 span_len(__u16 len)
{
	__u32 n = len;

	return n > PBP_SPAN_MAX ? PBP_SPAN_MAX : n;
}

/* Returns 0, or <0 if the copy faulted and nothing was taken from it. */
static __always_inline int frame_by_span(struct walk_ctx *c, struct spanbuf *b,
					 struct frame_fields *ff)
{
	if (bpf_probe_read_user(b->fr, span_len(c->o.fr_span_len),
				(const void *)(c->frame + c->o.fr_span_lo)))
		return -1;
	ff->prev = span_u64(b->fr, c->r_prev);
	ff->code = span_u64(b->fr, c->r_code) & ~(__u64)c->o.exec_tag_bits;
	if (c->o.instr_is_int)
		ff->instr = (__u64)(__s64)(__s32)span_u32(b->fr, c->r_instr);
	else
		ff->instr = span_u64(b->fr, c->r_instr);
	ff->shim = false;
	if (c->o.fr_owner != PBP_NOOFF) {
		__u8 owner = b->fr[c->r_owner & SPAN_MASK];

		ff->shim = owner == c->o.owner_cstack || owner == c->o.owner_interp;
	}
	return 0;
}

/* One read per field: no span, or the span touched a page a field does not. */
static __always_inline int frame_by_field(const struct pbp_offsets *o, __u64 frame,
					  struct frame_fields *ff)
{
	int err = 0;

	ff->shim = is_shim(o, frame, &err);
	if (!err && !ff->shim) {
		err = read_ptr(&ff->code, frame + o->fr_code);
		ff->code &= ~(__u64)o->exec_tag_bits;
		if (o->instr_is_int) {
			__s32 lasti = 0;

			err |= bpf_probe_read_user(&lasti, sizeof(lasti),
						   (const void *)(frame + o->fr_instr));
			ff->instr = (__u64)(__s64)lasti;
		} else {
			err |= read_ptr(&ff->instr, frame + o->fr_instr);
		}
	}
	if (!err)
		err = read_ptr(&ff->prev, frame + o->fr_previous);
	return err;
}

static __always_inline int code_by_span(struct walk_ctx *c, struct spanbuf *b, __u64 code,
					struct pbp_frame *f)
{
	if (bpf_probe_read_user(b->co, span_len(c->o.code_span_len),
				(const void *)(code + c->o.code_span_lo)))
		return -1;
	f->firstlineno = span_u32(b->co, c->r_line);
	f->name_lo = (__u32)span_u64(b->co, c->r_name);
	return 0;
}

static __always_inline int code_by_field(const struct pbp_offsets *o, __u64 code,
					 struct pbp_frame *f)
{
	__u64 name = 0;
	__u32 line = 0;
	int err;

	err = bpf_probe_read_user(&line, sizeof(line), (const void *)(code + o->code_firstlineno));
	err |= read_ptr(&name, code + o->code_name);
	f->firstlineno = line;
	f->name_lo = (__u32)name;
	return err;
}

/* Two words, by name: an index computed from i is one the verifier cannot bound. */
_Static_assert(PBP_MAX_FRAMES == 128, "set_entry knows two words of .entries");
static __always_inline void set_entry(struct pbp_sample *s, __u32 i)
{
	__u64 bit = 1ull << (i & 63);

	if (i < 64)
		s->entries[0] |= bit;
	else if (i < PBP_MAX_FRAMES)
		s->entries[1] |= bit;
}

/*
 * --native: which frames began an activation of the evaluation loop. 3.12+:
 * the frame copied last, when a shim comes after it (the loop's entry frame:
 * owned by the C stack on 3.12 and 3.13, by the interpreter on 3.14; 3.14's
 * base frame under a thread's first frame is the interpreter's too, and
 * marks that first frame, which begins the outermost group anyway); 3.11: the
 * frame about to be copied, when its is_entry byte says so.
 */
static __always_inline void mark_entry(struct walk_ctx *c, struct pbp_sample *s,
				       struct frame_fields *ff)
{
	__u8 entry = 0;

	if (ff->shim && c->n > 0)
		set_entry(s, c->n - 1);
	if (!ff->shim && c->o.fr_is_entry != PBP_NOOFF &&
	    bpf_probe_read_user(&entry, 1, (const void *)(c->frame + c->o.fr_is_entry)) == 0 && entry)
		set_entry(s, c->n);
	if (c->o.fr_is_entry != PBP_NOOFF || c->o.fr_owner != PBP_NOOFF)
		s->flags |= PBP_F_ENTRIES;
}

/*
 * 3.11 to 3.13 keep no running task where the kernel can read it: the
 * outermost coroutine frame stands for it (the walk goes outwards, so the
 * last one seen), one byte read a frame, and only when --async asks.
 */
static __always_inline void note_coro(struct walk_ctx *c)
{
	__u8 owner = 0;

	if (c->o.coro_owner && c->o.coro_owner != PBP_NOOFF &&
	    bpf_probe_read_user(&owner, 1, (const void *)(c->frame + c->o.coro_owner)) == 0 &&
	    owner == c->o.owner_gen)
		c->coro = c->frame;
}

/*
 * One step of the frame walk, run by bpf_loop so the verifier checks it once.
 * A frame is counted only when all its reads succeeded. Each frame costs one
 * copy of its span and one of its code object's; a span copy that faults
 * (it may reach a page the fields themselves do not) is retried field by
 * field, so spans never lose a frame the old reads would have got.
 */
static long walk_step(__u32 i, void *vctx)
{
	struct walk_ctx *c = vctx;
	struct frame_fields ff = {};
	struct pbp_sample *s;
	struct spanbuf *b;
	struct pbp_frame *f;

	if (!c->frame)
		return 1;
	s = bpf_map_lookup_elem(&scratch, &c->buf);
	b = bpf_map_lookup_elem(&spanbufs, &c->buf);
	if (!s || !b)
		return 1;
	if (!c->fr_span || frame_by_span(c, b, &ff))
		c->err = frame_by_field(&c->o, c->frame, &ff);
	if (c->err)
		return 1;
	if (entry_marks)
		mark_entry(c, s, &ff);
	if (!ff.shim) {
		if (c->n >= PBP_MAX_FRAMES)
			return 1;
		f = &s->frames[c->n & (PBP_MAX_FRAMES - 1)];
		f->code = ff.code;
		f->instr = ff.instr;
		if (!c->co_span || code_by_span(c, b, ff.code, f))
			c->err = code_by_field(&c->o, ff.code, f);
		if (c->err)
			return 1;
		c->fresh |= first_sight(code_key(c->tgid, f));
		c->n++;
		note_coro(c);
	}
	c->frame = ff.prev;
	return 0;
}

/* A field of width bytes at off lies inside the span [lo, lo + len): its place there. */
static __always_inline bool in_span(__u16 off, __u32 width, __u16 lo, __u16 len, __u32 *rel)
{
	if (off == PBP_NOOFF || off < lo || (__u32)(off - lo) + width > len)
		return false;
	*rel = off - lo;
	return true;
}

/*
 * User space checked the spans; checking again here costs a few compares
 * per sample and keeps a wrong one from reading stale buffer bytes.
 */
static __always_inline void span_check(struct walk_ctx *c)
{
	const struct pbp_offsets *o = &c->o;
	__u16 lo = o->fr_span_lo, len = o->fr_span_len;

	c->fr_span = len > 0 && len <= PBP_SPAN_MAX &&
		in_span(o->fr_previous, 8, lo, len, &c->r_prev) &&
		in_span(o->fr_code, 8, lo, len, &c->r_code) &&
		in_span(o->fr_instr, o->instr_is_int ? 4 : 8, lo, len, &c->r_instr) &&
		(o->fr_owner == PBP_NOOFF || in_span(o->fr_owner, 1, lo, len, &c->r_owner));
	lo = o->code_span_lo;
	len = o->code_span_len;
	c->co_span = len > 0 && len <= PBP_SPAN_MAX &&
		in_span(o->code_firstlineno, 4, lo, len, &c->r_line) &&
		in_span(o->code_name, 8, lo, len, &c->r_name);
}

/* On a fault or at the bound, .resume names the first frame not copied, for user space. */
static __always_inline bool walk(struct pbp_sample *s, const struct pbp_offsets *o, __u64 tstate,
				 __u32 buf)
{
	struct walk_ctx c = { .o = *o, .buf = buf, .tgid = s->tgid };

	span_check(&c);
	if (o->ts_running_task) {
		__u64 task = 0;

		/* With the stack, the task it belongs to: user space names it later. */
		if (read_ptr(&task, tstate + o->ts_running_task) == 0) {
			s->task = task;
			s->flags |= PBP_F_TASK;
		}
	}
	c.frame = first_frame(o, tstate, &c.err);
	if (!c.err)
		bpf_loop(MAX_WALK, walk_step, &c, 0);
	if (c.err)
		s->flags |= PBP_F_FAULT;
	else if (c.frame)
		s->flags |= PBP_F_TRUNCATED;
	s->resume = c.frame;
	s->nframes = c.n;
	if (c.coro) {
		s->task = c.coro;
		s->flags |= PBP_F_CORO;
	}
	return c.fresh;
}

static __always_inline void read_gil(struct pbp_sample *s, const struct pbp_proc *p)
{
	__s32 locked = 0;
	__u64 holder = 0;

	if (!p->gil_locked)
		return;
	if (bpf_probe_read_user(&locked, sizeof(locked), (const void *)p->gil_locked) ||
	    read_ptr(&holder, p->gil_holder))
		return;
	s->flags |= PBP_F_GIL_KNOWN;
	/* locked -1: not created yet (3.6 until a second thread), its one Python thread runs freely. */
	if (s->tstate && (locked < 0 || (locked && holder == s->tstate)))
		s->flags |= PBP_F_HOLDS_GIL;
}

/*
 * User space wakes on its own timer and drains the ring, so a record asks
 * for a wakeup only once the ring holds more than wake_bytes: a host with
 * many busy CPUs is drained before it loses samples, and nothing else
 * pays an irq_work for a wakeup nobody waits for.
 */
const volatile __u64 wake_bytes = 4 << 20;

/*
 * A program that makes code all the time (exec, eval) would wake user space
 * at every sample: a first sight wakes it at most once per FRESH_GAP_NS per
 * CPU, which bounds how long a new name waits to be read.
 */
#define FRESH_GAP_NS (2 * 1000000ull)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fresh_woke SEC(".maps");

static __always_inline bool fresh_wake(__u64 now)
{
	__u32 k = 0;
	__u64 *last = bpf_map_lookup_elem(&fresh_woke, &k);

	if (!last || now - *last < FRESH_GAP_NS)
		return false;
	*last = now;
	return true;
}

static __always_inline long output(struct pbp_sample *s, bool fresh)
{
	__u64 size = __builtin_offsetof(struct pbp_sample, frames) +
		     (__u64)(s->nframes & (PBP_MAX_FRAMES - 1)) * sizeof(struct pbp_frame);
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (s->nframes == PBP_MAX_FRAMES)
		size = sizeof(*s);
	if ((fresh && fresh_wake(s->ts)) || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	return bpf_ringbuf_output(&events, s, size, flags);
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

/* ------------------------------------------------------------ kernel stacks */

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
 * the kernel saved on entry. A few loads: every sample has them, for the
 * innermost native frame user space names.
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
		saved_regs(s);
		return;
	}
	CTX_COPY(s, r);
	if (s->ip)
		s->flags |= PBP_F_REGS;
#endif
}

/* ------------------------------------------------------------ finding a thread's state */

#define FIND_MAX 1024          /* thread states and interpreters looked at, at most */
/*
 * A thread with no Python state (a native worker: BLAS, a C library's pool)
 * would pay for a walk at every sample: after a walk that finds nothing it
 * is not walked again for this long. A Python thread still starting is
 * registered by user space meanwhile, at its first sample.
 */
#define FIND_AGAIN_NS (100 * 1000000ull)

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
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
		fresh |= walk(s, &p->off, s->tstate, BUF_SAMPLE);
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

/* ------------------------------------------------------------ thread state */

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
	fresh = walk(s, &p->off, tstate, BUF_SWITCH);
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
		st->off_reason = off_reason(st, prev, tgid, prev_state);
		st->oncpu = 0;
		st->switches++;
		st->last_switch_ns = now;
		/* Short waits (GIL, preemption) are left to the tick: most end before one. */
		if (st->off_reason == PBP_OFF_SLEEP || st->off_reason == PBP_OFF_DISK)
			snapshot(ctx, st, tgid, tid, tstate, now);
	}
	st = NULL;
	if (task_ids(next, &tgid, &tid))
		st = tstate_of(tgid, tid, &tstate);
	if (st) {
		/* off_reason is kept: it says where the thread was until this instant. */
		st->oncpu = 1;
		st->switches++;
		st->last_switch_ns = now;
	}
	return 0;
}


/* ------------------------------------------------------------ process lifecycle */

static __always_inline void proc_event_flags(__u32 kind, __u32 pid, __u32 parent, __u64 flags)
{
	struct pbp_proc_event ev = { .kind = kind, .pid = pid, .parent = parent };

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

/* Whole-host mode: every exec may start a Python process; user space checks it. */
const volatile bool all_execs = false;
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
