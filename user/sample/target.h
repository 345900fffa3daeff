/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_TARGET_H
#define PBP_SAMPLE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "pybpfprof.h"

#include "sample/asyncstack.h"
#include "sample/mode.h"
#include "symbol/native.h"
#include "symbol/natstack.h"
#include "symbol/kstack.h"
#include "symbol/symbolize.h"

struct proc_meta;

struct agg;
struct timeline;
struct pyproc;
struct pythread;
struct sampler;
struct sampler_ops;


struct profile_opts {
	enum pbp_mode mode;
	unsigned hz;
	bool per_thread;        /* root frame "thread TID name" */
	bool status;            /* leaf frame "[running]", ... */
	/*
	 * cpu mode on a whole host (-a, the agent): a new thread the kernel
	 * found is counted at once and named a little later, with the threads
	 * started meanwhile, by one list read instead of one each. Its first
	 * samples carry its comm (so not with per_thread roots, baked in).
	 */
	bool names_late;
	bool async;             /* asyncio: "task NAME" frames above a running task's (3.11+) */
	/*
	 * A cpu sample of a thread without the GIL gets its innermost native
	 * function as the leaf: "[native] deflate (libz.so.1.2.13)".
	 */
	bool native_leaf;
	/*
	 * --native: the kernel copies the top of each sample's user stack
	 * (ustack_bytes), which is unwound and woven with the Python frames.
	 */
	bool native;
	/*
	 * --kernel: a sample of a thread in the kernel, or sleeping in it,
	 * ends with its kernel stack, "[kernel] do_select".
	 */
	bool kernel;
	bool native_fp;         /* --native=fp: the kernel walks frame pointers instead of copying */
};

/* Where samples and ticks of every target end up. */
struct collector {
	struct profile_opts o;
	struct sampler *smp;
	const struct sampler_ops *ops;  /* what target.c calls smp through */
	struct agg *agg;
	struct timeline *timeline;      /* when each sample was counted; NULL: not kept */
	struct symstats sym;
	uint32_t *locs;         /* scratch: one stack */
	uint64_t dropped;       /* samples of threads that are not Python threads */
	uint64_t ticks, late_ticks;
	uint64_t reused;        /* wall/gil: stack reused, the thread had not run: no read */
	uint64_t from_switch;   /* wall/gil: stack the kernel took as the thread left the CPU */
	uint64_t from_kernel;   /* wall/gil: on-CPU thread, stack from its last kernel sample */
	uint64_t read_now;      /* wall/gil: stack read from the target at the tick */
	uint64_t late_switches; /* wall/gil: switches between the tick instant and the look */
	uint64_t states_guessed; /* of threads with more of them than the kernel records */
	uint64_t rescans, rescan_ns;    /* thread-list reads, and the time they took */
	/*
	 * Reads of threading's registries for names; named threads found still
	 * so named by a read of their Thread alone; and named threads not looked
	 * at, not sampled since (target.c: names_hold).
	 */
	uint64_t name_reads, names_checked, names_unsampled;
	uint64_t lists_spared;  /* list reads asked for by adopted threads, all ended by then: not made */
	uint64_t labels_made, labels_kept;      /* targets' labels made (from /proc), and found unchanged */
	struct pythread *list;  /* scratch for pythreads_read, every target's: made at the first */
	uint64_t reads_gone;    /* reads of the memory of targets since freed (target_fini) */
	struct async_stats async;
	struct natsym *natsym;  /* native names, every target's: made at the first need */
	uint64_t native_leaves; /* samples given a native leaf */
	uint64_t native_ns;     /* the time naming them took */
	struct natstack_stats natstack; /* --native */
	struct kstacks *kstacks;        /* --kernel: made before sampling (reads kallsyms) */
};

struct tcache;

/* One profiled process and what is known of its threads. */
struct target {
	pid_t pid;
	struct pyproc *p;
	bool alive;
	uint64_t last_rescan, gen;
	uint64_t rescan_ok;     /* no list read before this (its cost bounds their rate) */
	uint64_t names_ok;      /* no names read before this, for the same reason */
	bool names_due;         /* the list changed since the names were read */
	uint64_t init_ns;       /* when target_init registered it */
	uint64_t list_hash;     /* of the thread list last registered */
	uint64_t names_ns;      /* when the threads' Python names were last read */
	uint64_t unnamed_hash;  /* the list whose threads had no name yet, read again (below) */
	uint32_t unnamed_tries; /* reads of its names since: 4 at most, further and further apart */
	uint64_t rescan_soon, rescan_later; /* a thread started: read the list then (0: no) */
	bool later_adopted;     /* rescan_later is for threads adopted at their samples (names_late) */
	uint64_t gil_addr;      /* the main interpreter's GIL struct, 0 if unknown */
	struct tcache *tc;      /* open addressing by tid */
	uint32_t tc_cap, tc_n;
	int64_t proc_loc;       /* root frame "process PID cmdline", -1 for none */
	/*
	 * The root frame's location as last made, and the aggregate's
	 * agg_loc_epoch() then: a window that kept the locations keeps it.
	 */
	int64_t root_loc;
	uint64_t root_locs;
	/*
	 * Its labels and root frame's name, kept: every window's aggregate
	 * needs them again, and making them reads /proc (target_set_labels).
	 */
	struct proc_meta *meta;
	char *root;
	uint64_t labels_ns;     /* when they were made */
	uint64_t labels_cg;     /* the hash of /proc/PID/cgroup then (cgroup_read_hashed) */
	bool labels_moved;      /* -a: the kernel said it moved to another cgroup since */
	/*
	 * Samples counted, and their count at the last periodic list read and
	 * when the labels were made: a process with none since reads nothing.
	 */
	uint64_t counted, counted_rescan, counted_labels;
	bool window_stale;      /* a window closed: made again for the new one at its next sample */
	char comm[16];          /* names_late: the process's command name, "" until needed */
	uint64_t gil_ticks, gil_held, gil_contended;
	struct async_state *aio;        /* --async: the asyncio layout, NULL until looked for */
	struct natproc nat;     /* its executable mappings, for native leaves */
	struct stackmemo *memo; /* its stacks named lately (symbolize_memo), NULL until sampled */
};

/* Once due, the rescan will happen: the loop comes back for it (rescan_soon). */
static inline void target_come_back(struct target *t, uint64_t when)
{
	if (t->rescan_soon < when)
		t->rescan_soon = when;
}

/* Register a freshly opened process with the sampler and read its threads. */
int target_init(struct collector *c, struct target *t);
void target_fini(struct collector *c, struct target *t);
/*
 * Re-read the thread list; names only when it changed or are old, unless
 * full. One that is not full waits (rescan_soon) if the last one was too
 * recent for what it cost.
 */
void target_rescan(struct collector *c, struct target *t, bool full);
/*
 * The list read rescan_later asks for, due now: false when it must be made;
 * true when it is spared, as it would only find the adopted threads gone
 * (they are dropped, and lists_spared counted).
 */
bool target_spare_late_read(struct collector *c, struct target *t);
void target_on_sample(struct collector *c, struct target *t, const struct pbp_sample *s);
/* wall and gil modes: count every thread (or the GIL holder) once, as at instant (ns, monotonic). */
void target_tick(struct collector *c, struct target *t, uint64_t instant);
/*
 * The process's labels (copied) and the name of its root frame (NULL: none),
 * given to the aggregate now and to every window's after it: 0 or -PBP_E_NOMEM.
 */
int target_set_labels(struct collector *c, struct target *t, const struct proc_meta *m, const char *root);
/* After agg_reset: forget what pointed into the old aggregate (kept stacks, ids); re-set names and labels. */
void target_new_window(struct collector *c, struct target *t);
void target_print_threads(const struct collector *c, const struct target *t, FILE *o);

#endif /* PBP_SAMPLE_TARGET_H */
