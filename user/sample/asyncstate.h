/* SPDX-License-Identifier: MIT */
/* The state --async keeps per target: asyncstack.c's layout, asyncidle.c's graph and pacing. */
#ifndef PBP_SAMPLE_ASYNCSTATE_H
#define PBP_SAMPLE_ASYNCSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cpython/asyncio_graph.h"
#include "cpython/asyncio_offsets.h"

#define IDLE_THREADS 64         /* loops' threads paced apart; more are read at every tick */

/*
 * One loop's thread: when its task list may be read again, and what the
 * last read counted, which the ticks until the next credit again: the
 * waiting tasks' stacks (ids in the window's aggregate; valid false after
 * the window closed) and the tasks it found past the bound.
 */
struct idle_pace {
	uint64_t tstate;
	uint64_t next_ns;
	uint32_t *ids;
	uint64_t *tasks;        /* the task each of ids stands for */
	size_t nids, cap;
	bool valid;
	uint64_t beyond;
};

struct async_state {
	bool ok, never;         /* layout found; never to be (before 3.14, or corrupt) */
	uint64_t retry_ns;
	uint32_t looks;         /* at the layout so far: the next one sooner while few */
	struct aio_layout l;
	uint64_t md;            /* l.legacy: asyncio.tasks' module dict */
	struct aio_graph g;     /* wall mode's waiting tasks; tasks NULL until first needed */
	uint64_t g_tstate;      /* the thread whose list g is (0: none read whole) */
	struct idle_pace pace[IDLE_THREADS];
	uint64_t join_next_ns;  /* before 3.14, outside wall mode: the registries' next read */
};

#endif /* PBP_SAMPLE_ASYNCSTATE_H */
