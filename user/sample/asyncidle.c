/* SPDX-License-Identifier: MIT */
/*
 * asyncidle.c: wall mode's waiting tasks (`record --async -m wall`).
 *
 * A wall tick counts each thread once; a thread running an event loop is
 * then one stack, its loop's `select` or the one task running, and the
 * tasks waiting meanwhile are nowhere. With --async each tick of such a
 * thread also counts every task of its loop that is not running, once, as
 * a stack of its own:
 *
 *   task main;task sleeper;sleeper;[awaiting] asyncio.sleep
 *
 * the tasks awaiting it (the first of each awaited-by set, outermost
 * first), the task, its coroutine chain, and a leaf saying what the
 * innermost coroutine awaits: asyncio's own coroutines at the chain's end
 * folded into "asyncio.NAME" (asyncio.sleep, asyncio.Event.wait), else a
 * task ("task NAME"), else the awaited object's type (_GatheringFuture).
 * One sample per waiting task per tick, so a task's width is the time it
 * spent waiting, in the same units as the threads'; those samples come on
 * top of the threads' (the summary says how many), and carry no status.
 *
 * Reading a loop's tasks costs in proportion to them (200 tasks, their
 * chains and names: 11 ms on the test machine), which at 99 ticks a second
 * took half a CPU. So after each read of a thread's list the next waits
 * IDLE_GAP times as long as it took, and a read counts each waiting task
 * once for every tick of that thread since the last read: the totals stay
 * those of one sample per task per tick, the tasks are sampled less often
 * (at most ~1/(1+IDLE_GAP) of the time goes to reading them). A few tasks
 * are read every tick (6 tasks: 0.4 ms).
 *
 * Before 3.14 the same read gives the running task's awaiters (no task
 * records its own): outside wall mode, async_graph_refresh makes it when a
 * sample is named, paced alike (once for the process: the registries hold
 * every loop's tasks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/asyncidle.h"
#include "aggregate/timeline.h"
#include "core/clock.h"
#include "core/errors.h"
#include "cpython/asyncio_graph.h"
#include "cpython/asyncio_legacy.h"
#include "cpython/asyncio_tasks.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/stack.h"
#include "cpython/thread.h"
#include "proc/remote.h"
#include "sample/asyncstack.h"
#include "sample/asyncstate.h"

#define IDLE_GAP 10

/* Root labels, awaiters, the task's chain and the leaf. */
#define IDLE_LOCS (4 + ASYNC_MAX_TASKS + AIO_MAX_CHAIN + 1)

struct idle {
	struct pyproc *p;
	const struct aio_graph *g;
	const struct async_sink *k;
	int64_t *task_loc;      /* "task NAME" of each task, made once a read (-1: not yet) */
	uint64_t weight;        /* ticks the read stands for */
};

static int64_t task_loc(struct idle *d, size_t i)
{
	char name[128], frame[140];

	if (d->task_loc[i] < 0) {
		aio_task_name(d->p, d->g->tasks[i].name, name, sizeof(name));
		snprintf(frame, sizeof(frame), "task %s", name);
		d->task_loc[i] = agg_loc(d->k->a, frame, NULL, -1, LOC_PY);
	}
	return d->task_loc[i];
}

static bool in_asyncio(const struct codeinfo *ci)
{
	return ci && strstr(ci->file, "/asyncio/") != NULL;
}

/* The leaf: what the chain's end awaits. folded: asyncio's coroutine the user's awaits, or NULL. */
static int64_t leaf_loc(struct idle *d, const struct aio_task *t, const struct codeinfo *folded)
{
	char what[160], name[128];

	if (folded) {
		snprintf(what, sizeof(what), "[awaiting] asyncio.%s", folded->name);
	} else if (t->awaits_task >= 0) {
		aio_task_name(d->p, d->g->tasks[t->awaits_task].name, name, sizeof(name));
		snprintf(what, sizeof(what), "[awaiting] task %s", name);
	} else {
		snprintf(what, sizeof(what), "[awaiting] %s", t->chain_cut ? "<unread>" :
			 t->awaits_name[0] ? t->awaits_name : "<unknown>");
	}
	return agg_loc(d->k->a, what, NULL, -1, LOC_PY);
}

/* The task's coroutine frames into locs; the asyncio ones at its end left for the leaf. */
static int chain_locs(struct idle *d, const struct aio_task *t, uint32_t *locs, uint32_t *n)
{
	const struct codeinfo *ci[AIO_MAX_CHAIN];
	size_t cut = t->nframes;
	int err;

	for (size_t f = 0; f < t->nframes; f++)
		ci[f] = codecache_get(d->p->codes, d->p, t->frames[f].code, NULL, &err);
	while (!t->chain_cut && cut > 0 && in_asyncio(ci[cut - 1]))
		cut--;
	for (size_t f = 0; f < cut; f++) {
		int64_t id = ci[f] ? agg_loc(d->k->a, ci[f]->name, ci[f]->file,
					     frame_line(d->p, ci[f], t->frames[f].instr), LOC_PY)
				   : agg_loc(d->k->a, "[unknown]", NULL, -1, LOC_PY);

		if (id < 0)
			return (int)id;
		locs[(*n)++] = (uint32_t)id;
	}
	int64_t leaf = leaf_loc(d, t, cut < t->nframes ? ci[cut] : NULL);

	if (leaf < 0)
		return (int)leaf;
	locs[(*n)++] = (uint32_t)leaf;
	return 0;
}

/* Task i's awaiters (first of each set), outermost first, then itself, into locs. */
static int task_locs(struct idle *d, size_t i, uint32_t *locs, uint32_t *n)
{
	uint32_t chain[ASYNC_MAX_TASKS];
	size_t nt = 0;

	for (uint32_t j = (uint32_t)i; nt < ASYNC_MAX_TASKS;) {
		bool seen = false;

		for (size_t k = 0; k < nt; k++)
			seen |= chain[k] == j;
		if (seen)
			break;          /* a cycle of awaiters: read while it changed */
		chain[nt++] = j;
		if (d->g->tasks[j].nawaiters == 0)
			break;
		j = d->g->tasks[j].awaiters[0];
	}
	while (nt-- > 0) {
		int64_t id = task_loc(d, chain[nt]);

		if (id < 0)
			return (int)id;
		locs[(*n)++] = (uint32_t)id;
	}
	return 0;
}

static int count_task(struct idle *d, size_t i)
{
	uint32_t locs[IDLE_LOCS], n = d->k->nroot;
	int err;

	memcpy(locs, d->k->root, n * sizeof(*locs));
	err = task_locs(d, i, locs, &n);
	if (!err)
		err = chain_locs(d, &d->g->tasks[i], locs, &n);
	if (!err)
		err = agg_add(d->k->a, &d->k->tags, locs, n, d->weight);
	if (!err && d->k->tl)
		timeline_add(d->k->tl, agg_last(d->k->a), d->k->when);
	return err;
}

static uint64_t unread(const struct aio_stats *s)
{
	return (uint64_t)s->list_faults + s->list_cycles + s->list_long + s->not_tasks +
	       s->chain_faults + s->chain_cycles + s->chain_long + s->set_faults + s->set_corrupt;
}

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return remote_read(ctx, addr, buf, len);
}

/* The thread's pacing: NULL when the table is full (its list is then read at every tick). */
static struct idle_pace *pace_of(struct async_state *s, uint64_t tstate)
{
	for (int i = 0; i < IDLE_THREADS; i++) {
		if (s->pace[i].tstate == tstate)
			return &s->pace[i];
		if (s->pace[i].tstate == 0) {
			s->pace[i].tstate = tstate;
			return &s->pace[i];
		}
	}
	return NULL;
}

/* Count the waiting tasks of the graph just read. */
static int count_all(struct idle *d, struct async_stats *st)
{
	const struct aio_graph *g = d->g;
	int err = 0;

	if (g->n && !(d->task_loc = malloc(g->n * sizeof(*d->task_loc))))
		return -PBP_E_NOMEM;
	if (d->task_loc)
		memset(d->task_loc, 0xff, g->n * sizeof(*d->task_loc));     /* all -1 */
	for (size_t i = 0; !err && i < g->n; i++) {
		if (g->tasks[i].running || g->tasks[i].owner != 0)
			continue;       /* before 3.14 the registries hold every loop's tasks */
		err = count_task(d, i);
		st->waiting += err ? 0 : d->weight;
	}
	free(d->task_loc);
	return err;
}

/* The tasks of the thread of tstate: its list (3.14), or asyncio's registries before. */
static int read_tasks(struct async_state *s, struct pyproc *p, uint64_t tstate, const struct aio_mem *m,
		      struct aio_source *src)
{
	struct pythread one = { .tstate = tstate };

	if (s->l.legacy)
		return remote_ptr(p->r, tstate + p->v.ts_thread_id, &one.ident) == 0 ?
		       aio_legacy_tasks(p, &s->l, s->md, &one, 1, &s->g) : -PBP_E_FAULT;
	if (remote_ptr(p->r, tstate + s->l.ts_running_task, &src->running_task) != 0)
		src->running_task = 0;
	return aio_graph_read(m, &p->v, &s->l, src, 1, &s->g);
}

/* read_tasks, counted: one task-list read, and the tasks it could not read. */
static int read_graph(struct async_state *s, struct pyproc *p, uint64_t tstate, const struct aio_mem *m,
		      struct aio_source *src, struct async_stats *st)
{
	int err = read_tasks(s, p, tstate, m, src);

	st->graph_reads++;
	st->graph_unread += unread(&s->g.st);
	return err;
}

int async_graph_refresh(struct async_state *s, struct pyproc *p, uint64_t tstate, struct async_stats *st)
{
	struct aio_mem m = { read_mem, p->r };
	struct aio_source src = { 0, 0, 0 };
	uint64_t t0 = mono_ns();
	int err;

	if (!s->ok || !s->l.legacy || (s->g.tasks && t0 < s->join_next_ns))
		return 0;
	if (!s->g.tasks && aio_graph_init(&s->g) != 0)
		return -PBP_E_NOMEM;
	err = read_graph(s, p, tstate, &m, &src, st);
	s->join_next_ns = mono_ns() + IDLE_GAP * (mono_ns() - t0);
	st->graph_ns += mono_ns() - t0;
	return err;
}

int async_idle_tick(struct async_state *s, struct pyproc *p, uint64_t tstate,
		    const struct async_sink *k, struct async_stats *st)
{
	struct aio_mem m = { read_mem, p->r };
	struct aio_source src = { tstate + s->l.ts_tasks_head, 0, 0 };
	struct idle d = { p, &s->g, k, NULL, 1 };
	struct idle_pace *pc;
	uint64_t t0 = mono_ns();
	int err;

	if (!s->ok || k->nroot > 4)
		return 0;
	pc = pace_of(s, tstate);
	if (pc) {
		d.weight = ++pc->owed;
		if (t0 < pc->next_ns)
			return 0;
	}
	if (!s->g.tasks && aio_graph_init(&s->g) != 0)
		return -PBP_E_NOMEM;
	err = read_graph(s, p, tstate, &m, &src, st);
	if (!err)
		err = count_all(&d, st);
	if (pc) {
		pc->owed = 0;
		pc->next_ns = mono_ns() + IDLE_GAP * (mono_ns() - t0);
	}
	st->graph_ns += mono_ns() - t0;
	return err;
}
