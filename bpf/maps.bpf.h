// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The maps every part shares (targets, threads, the rings, scratch space,
 * counters), the first-sight filter that wakes user space, and the per-CPU
 * budget for walks.
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_MAPS_H
#define PBP_BPF_MAPS_H

/* Sizes of the maps below. */
#define PROCS_MAX 4096                  /* target processes at once (user space caps it lower) */
#define THREADS_MAX 65536               /* their threads whose state was found */
#define EVENTS_BYTES (16 << 20)         /* the samples' ring */
#define PROCEVENTS_BYTES (256 << 10)    /* the process events' ring */
#define SCRATCH_SLOTS 2                 /* BUF_SAMPLE, BUF_SWITCH */

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
	__uint(max_entries, PROCS_MAX);
	__type(key, __u32);
	__type(value, struct pbp_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, THREADS_MAX);
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
	__uint(max_entries, EVENTS_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROCEVENTS_BYTES);
} procevents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
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
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct spanbuf);
} spanbufs SEC(".maps");

/*
 * 3.12+: code objects already read, per CPU, direct-mapped by address: a
 * slot holds one code object's identity fields, keyed by the process's
 * registration (tgid, epoch), the thread's interpreter, its address, and
 * the interpreter's count (of code objects freed, 3.14+, or made, 3.12 and
 * 3.13) when it was read. A slot another object took is a miss, not a
 * wrong answer.
 */
#define CODE_SLOTS 4096

struct code_slot {
	__u64 code, interp, gen;
	__u32 tgid, epoch;
	__u32 firstlineno, code_key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CODE_SLOTS);
	__type(key, __u32);
	__type(value, struct code_slot);
} codecache SEC(".maps");

/*
 * Per-CPU landing space for a window of a thread's data stack (3.11+):
 * frames found inside are read from here. The slack past PBP_BULK_MAX lets
 * a masked offset plus a u64 load stay in bounds for the verifier.
 */
struct bulkbuf {
	__u8 data[PBP_BULK_MAX + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct bulkbuf);
} bulkbufs SEC(".maps");

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
static __always_inline __u64 seen_key(__u32 tgid, const struct pbp_frame *f)
{
	return (f->code ^ (__u64)f->code_key << 16 ^ f->firstlineno) * 0x9E3779B97F4A7C15ull ^ tgid;
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

#endif /* PBP_BPF_MAPS_H */
