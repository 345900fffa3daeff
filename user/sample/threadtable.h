/* SPDX-License-Identifier: MIT */
/*
 * A target's threads by kernel tid (open addressing, grown by doubling):
 * each one's thread state, kernel slot, last stack and what it was counted
 * as. target.c fills it and says when to sweep it; this file keeps it.
 */
#ifndef PBP_SAMPLE_THREADTABLE_H
#define PBP_SAMPLE_THREADTABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "aggregate/status.h"
#include "sample/target.h"

struct tcache {
	pid_t tid;              /* 0: empty slot */
	pid_t ns_tid;           /* in the target's own PID namespace, 0 when that is ours */
	uint64_t tstate;
	int slot;               /* in the kernel's tstates array, -1 if none */
	uint64_t gen;           /* rescan that last saw the thread */
	uint32_t *locs;         /* last stack, Python frames root first */
	uint32_t n, cap;
	bool have;
	bool read_off_cpu;      /* locs read while off CPU, at switch count `switches` */
	bool switch_snap;       /* ... by the kernel as it left the CPU, not used at a tick yet */
	uint64_t switches;
	uint64_t kernel_ns;     /* when locs came from a kernel sample, 0 otherwise */
	bool kernel_holds_gil, kernel_gil_known;
	uint64_t status[ST__COUNT];
	/*
	 * Wall mode counts an idle thread's same stack tick after tick: the aggregate's id for
	 * (locs, name, status) spares hashing it each time. -1: not known; reset when locs or name change.
	 */
	int64_t agg_id[ST__COUNT];
	int64_t label;          /* the thread's root label location, -1: not made yet */
	char name[64];
	/*
	 * The threading.Thread name was read from (0: named by comm or
	 * MainThread), and the thread's samples (the sum of status) when it was
	 * read or last found unchanged: a name is checked again only once the
	 * thread has been sampled since.
	 */
	uint64_t pyobj, named_samples;
	bool name_due;          /* name not given to this window's aggregate yet: at its first count */
	bool adopted;
	uint64_t task;          /* --async: the asyncio task its kept stack shows running, 0 none */           /* found by the kernel at a sample, no list read has given it since */
};

/* The thread tid, or NULL. */
struct tcache *tc_find(struct target *t, pid_t tid);
/* A new empty entry for tid (not there yet), or NULL when out of memory. */
struct tcache *tc_add(struct target *t, pid_t tid);
/* Samples counted of it (the sum of its statuses). */
uint64_t tc_samples(const struct tcache *e);
/* Drop the threads whose gen is not the target's (the last list read did not see them). */
void tc_sweep(struct collector *c, struct target *t);
/* Its stack must be counted anew: the aggregate ids and label are stale. */
void tc_forget_counted(struct tcache *e);

#endif
