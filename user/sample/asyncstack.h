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
	/* wall mode (asyncidle.c) */
	uint64_t waiting;       /* samples of waiting tasks, counted besides their threads' */
	uint64_t graph_reads;   /* task lists read (one a tick of each loop's thread) */
	uint64_t graph_unread;  /* bounded failures in them (struct aio_stats, summed) */
	uint64_t graph_ns;      /* the time they took */
	uint64_t missed;        /* waiting tasks' samples not counted: tasks past the bound */
};

void async_state_free(struct async_state *s);

/* Where a stack's running task comes from. */
struct async_src {
	uint64_t tstate;        /* its thread's state */
	bool from_kernel;       /* task is the kernel's copy at the sample (PBP_F_TASK) */
	uint64_t task;
	uint64_t coro_frame;    /* 3.11 to 3.13: the kernel's outermost coroutine frame (PBP_F_CORO), 0 none */
};

/*
 * asyncio's layout looked for now, as async_join would at its first stack
 * (3.11 to 3.13: only with a thread state, whose interpreter names the
 * registries; tstate 0 looks for 3.14's alone): *tell when the kernel is to
 * learn it. *sp is made on first use; 0 or -PBP_E_NOMEM.
 */
int async_prepare(struct async_state **sp, struct pyproc *p, uint64_t tstate, bool *tell);

/*
 * The stack locs[0..*n) (root first) of the thread of src->tstate in p
 * gets, when a task runs on it, a frame "task NAME" for the task and one for
 * each task awaiting it, outermost first, just above the task's own
 * coroutine frame. At most max locations in all. *sp is made on first use;
 * when the layout is found, p->v.k.ts_running_task is set and *tell says
 * the kernel must be told. 0, or -PBP_E_NOMEM; what cannot be read leaves
 * the stack as it was. wall: wall mode, whose ticks read the task list
 * (3.11 to 3.13's awaiters come from it; else the join reads it, paced).
 * *placed: the task the stack now shows running, 0 when none was placed.
 */
int async_join(struct async_state **sp, struct pyproc *p, struct agg *a, const struct async_src *src,
	       uint32_t *locs, uint32_t *n, uint32_t max, struct async_stats *st, bool *tell, bool wall,
	       uint64_t *placed);

#endif /* PBP_SAMPLE_ASYNCSTACK_H */
