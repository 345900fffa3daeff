/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_ASYNCSTACK_H
#define PBP_SAMPLE_ASYNCSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agg;
struct pyproc;

/* Tasks joined above a running one: its awaiter, theirs, ... */
#define ASYNC_MAX_TASKS 16

/* One target's asyncio layout, looked for until found (asyncio may be imported late). */
struct async_state;

struct async_stats {
	uint64_t tasked;        /* samples that got task frames */
	uint64_t unplaced;      /* a task ran but its coroutine was not on the stack read */
};

void async_state_free(struct async_state *s);
/*
 * The stack locs[0..*n) (root first) of the thread of tstate in process p
 * gets, when a task runs on it, a frame "task NAME" for the task and one for
 * each task awaiting it, outermost first, just above the task's own
 * coroutine frame. At most max locations in all. *sp is made on first use.
 * 0, or -PBP_E_NOMEM; what cannot be read leaves the stack as it was.
 */
int async_join(struct async_state **sp, struct pyproc *p, struct agg *a, uint64_t tstate,
	       uint32_t *locs, uint32_t *n, uint32_t max, struct async_stats *st);

#endif /* PBP_SAMPLE_ASYNCSTACK_H */
