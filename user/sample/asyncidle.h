/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_ASYNCIDLE_H
#define PBP_SAMPLE_ASYNCIDLE_H

#include <stdint.h>

#include "aggregate/aggregate.h"

struct async_state;
struct async_stats;
struct pyproc;
struct timeline;

/* Where one tick's waiting tasks are counted, and under which root frames. */
struct async_sink {
	struct agg *a;
	struct timeline *tl;    /* NULL: not kept */
	uint64_t when;          /* the tick instant (timeline) */
	struct stack_tags tags; /* the thread's pid and tid; status ST_UNKNOWN */
	const uint32_t *root;   /* process and thread labels, root first */
	uint32_t nroot;
	uint64_t running;       /* the task the thread's own stack at this tick shows running, 0 none */
};

/*
 * Wall mode with --async, at a tick of the thread of tstate: each task of
 * its loop that is not running counted once into k, as a stack of its own
 *
 *   root;task main;task sleeper;sleeper;[awaiting] asyncio.sleep
 *
 * (the tasks awaiting it, outermost first, itself, its coroutine chain, and
 * what that awaits). The list is read at most once every IDLE_GAP times the
 * last read's time, sooner when a tick sees its tasks changed (one small
 * read of the target); the ticks in between count the last read's stacks again.
 * Nothing until async_join has found the layout. What cannot be read is
 * counted (st->graph_unread) and left out, tasks past the bound in
 * st->missed for each tick; 0, or -PBP_E_NOMEM.
 */
int async_idle_tick(struct async_state *s, struct pyproc *p, uint64_t tstate,
		    const struct async_sink *k, struct async_stats *st);

/* A window closed: the stacks kept for the ticks between reads are gone with its aggregate. */
void async_idle_new_window(struct async_state *s);
/* What async_idle_tick keeps (the state itself is async_state_free's). */
void async_idle_free(struct async_state *s);

/*
 * Before 3.14 a task names no awaiter: those of the running task come from
 * the last read of asyncio's registries (wall mode's, at each tick). Where
 * no tick reads them (cpu and gil modes), or none has yet, they are read
 * here, paced as a tick's read is: the next no sooner than IDLE_GAP times
 * the last one's time after it. Nothing on 3.14 or before the layout is
 * found; 0, or -PBP_E_NOMEM (what cannot be read is counted, st->graph_unread).
 */
int async_graph_refresh(struct async_state *s, struct pyproc *p, uint64_t tstate, struct async_stats *st);

#endif /* PBP_SAMPLE_ASYNCIDLE_H */
