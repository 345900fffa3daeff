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
 * the window closed) and the tasks it found past the bound. Between
 * reads, what tells that its tasks changed: the detector's words as the
 * read began (has_sig: read) and the task it left out as running.
 */
struct idle_pace {
	uint64_t tstate;
	uint64_t next_ns;       /* the next read, unless a change reads earlier */
	bool early;             /* the last read came on a change: the next waits next_ns */
	bool has_sig;
	uint64_t sig[AIO_SIG_WORDS];
	uint64_t ran;           /* the task it found running (0: none) */
	uint64_t look[AIO_SIG_WORDS + 1];       /* a change the last tick saw: words, running task */
	bool looked;
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
	uint64_t reg[2];        /* l.legacy: its registries' sets (aio_legacy_registries) */
	struct aio_graph g;     /* wall mode's waiting tasks; tasks NULL until first needed */
	uint64_t g_tstate;      /* the thread whose list g is (0: none read whole) */
	struct idle_pace pace[IDLE_THREADS];
	uint64_t join_next_ns;  /* before 3.14, outside wall mode: the registries' next read */
};

#endif /* PBP_SAMPLE_ASYNCSTATE_H */
