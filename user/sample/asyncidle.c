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
 * Reading a loop's tasks costs in proportion to them (1,000 tasks, their
 * chains and names: 0.2 to 0.8 s on the test machine), so a thread's list is
 * read again only IDLE_GAP times as long as the last read took after it.
 * Every tick in between credits each waiting task the last read found with
 * one more sample of the stack that read made (agg_bump: no hashing, no
 * read of the target): 10,000 tasks cost a tick 10,000 additions, and no
 * tick goes uncounted, whenever the run ends. A task's stack is that of the
 * last read, up to IDLE_GAP read times old. Tasks made (or ended) after a
 * read would wait as long to be counted (or stop being), so each tick in
 * between also looks, cheaply, whether they changed (changed()), and a
 * change that holds for two ticks reads at once. After a window closes (top)
 * those stacks are gone with the aggregate: the next tick counts the graph
 * kept again into the new one, or reads, if another thread's read since
 * took its place. Tasks past the bound of a read (AIO_MAX_TASKS) are
 * counted, not read: their samples are the shortfall (st->missed), said at
 * the end.
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
#define EARLY_GAP (IDLE_GAP + 2)        /* read times after a read that came on a change */

/* Root labels, awaiters, the task's chain and the leaf. */
#define IDLE_LOCS (4 + ASYNC_MAX_TASKS + AIO_MAX_CHAIN + 1)

struct idle {
	struct pyproc *p;
	const struct aio_graph *g;
	const struct async_sink *k;
	int64_t *task_loc;      /* "task NAME" of each task, made once a read (-1: not yet) */
	struct idle_pace *pc;   /* where the stacks counted are kept (NULL: not kept) */
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

/*
 * asyncio's own files: .../pythonX.Y/asyncio/NAME.py, or .../Lib/asyncio/
 * of an interpreter run from its build tree (as the tests' 3.14t is). Any
 * "/asyncio/" in the path also folded a user's coroutines when their
 * project sat in a directory of that name.
 */
static bool in_asyncio(const struct codeinfo *ci)
{
	const char *a = NULL, *dir;

	for (const char *f = ci ? ci->file : ""; (f = strstr(f, "/asyncio/")) != NULL; f++)
		a = f;
	if (!a || strchr(a + 9, '/'))
		return false;
	for (dir = a; dir > ci->file && dir[-1] != '/'; dir--)
		;
	return strncmp(dir, "python3", 7) == 0 || (a - dir == 3 && strncmp(dir, "Lib", 3) == 0);
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

static int keep_id(struct idle_pace *pc, uint32_t id, uint64_t task)
{
	if (pc->nids == pc->cap) {
		size_t cap = pc->cap ? 2 * pc->cap : 64;
		uint32_t *ids = realloc(pc->ids, cap * sizeof(*ids));
		uint64_t *tasks = ids ? realloc(pc->tasks, cap * sizeof(*tasks)) : NULL;

		if (ids)
			pc->ids = ids;
		if (!tasks)
			return -PBP_E_NOMEM;
		pc->tasks = tasks;
		pc->cap = cap;
	}
	pc->tasks[pc->nids] = task;
	pc->ids[pc->nids++] = id;
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
		err = agg_add(d->k->a, &d->k->tags, locs, n, 1);
	if (!err && d->k->tl)
		timeline_add(d->k->tl, agg_last(d->k->a), d->k->when);
	if (!err && d->pc && agg_last(d->k->a) >= 0)
		err = keep_id(d->pc, (uint32_t)agg_last(d->k->a), d->g->tasks[i].addr);
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
		if (g->tasks[i].owner != 0)
			continue;       /* before 3.14 the registries hold every loop's tasks */
		if (g->tasks[i].running || g->tasks[i].addr == d->k->running) {
			if (d->pc)
				d->pc->ran = g->tasks[i].addr;
			continue;       /* its thread's stack at this tick counts it, running */
		}
		err = count_task(d, i);
		st->waiting += !err;
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

/*
 * read_tasks, counted: one task-list read, and the tasks it could not read.
 * The caller reads by the page (remote_cache_mutable, in an epoch of its
 * own): tasks, their coroutines, frames and names lie a few to a page, and
 * one read a page rather than one a field (1,000 tasks: 25,000 reads) made
 * a read of 1,000 tasks 6 times shorter.
 */
static int read_graph(struct async_state *s, struct pyproc *p, uint64_t tstate, const struct aio_mem *m,
		      struct aio_source *src, struct async_stats *st)
{
	int err = read_tasks(s, p, tstate, m, src);

	s->g_tstate = err ? 0 : tstate;
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
	remote_invalidate_all(p->r);
	remote_cache_mutable(p->r, true);
	err = read_graph(s, p, tstate, &m, &src, st);
	remote_cache_mutable(p->r, false);
	s->join_next_ns = mono_ns() + IDLE_GAP * (mono_ns() - t0);
	st->graph_ns += mono_ns() - t0;
	return err;
}

/*
 * A tick between reads: the last read's stacks, one sample more each, but
 * for the task the thread's own stack shows running at this tick. The read
 * may have found it waiting (a task that yields often: its step had ended
 * as the read passed), and counting it there too gave it two samples of
 * one tick (a spinning task beside 1,000 parked ones: 534 in 392 ticks).
 */
static void credit(const struct idle_pace *pc, const struct async_sink *k, struct async_stats *st)
{
	for (size_t i = 0; i < pc->nids; i++) {
		if (k->running && pc->tasks[i] == k->running)
			continue;
		agg_bump(k->a, pc->ids[i], 1);
		if (k->tl)
			timeline_add(k->tl, pc->ids[i], k->when);
		st->waiting++;
	}
	st->missed += pc->beyond;
}

/* The detector's words now, into sig: 0, or an error (then no change is known). */
static int probe(struct async_state *s, struct pyproc *p, uint64_t tstate, uint64_t *sig)
{
	memset(sig, 0, AIO_SIG_WORDS * sizeof(*sig));
	return s->l.legacy ? aio_legacy_sig(p, s->reg, sig) : aio_list_sig(p, &s->l, tstate, sig);
}

/*
 * Whether the thread's tasks changed since its last read, as far as a tick
 * can tell without reading them, and stay as they are since the last tick
 * (a read while a loop is still making tasks would find only part of
 * them). A change: the task the read found running is no longer (it waits
 * now, or ended), one runs that the read never saw (made since), or the
 * detector's words moved (a task made, or one ended: see aio_list_sig,
 * aio_legacy_sig for what they miss). A change is kept, with the words and
 * the running task, in pc->look: the next tick that finds the same reads.
 * Tasks made and ended at every tick never settle: they are read as often
 * as without the detector.
 */
static bool changed(struct async_state *s, struct pyproc *p, struct idle_pace *pc, uint64_t running)
{
	uint64_t now[AIO_SIG_WORDS + 1] = { 0 };
	bool seen = running == 0 || running == pc->ran, moved, settled;

	for (size_t i = 0; !seen && i < pc->nids; i++)
		seen = pc->tasks[i] == running;
	if (pc->has_sig && probe(s, p, pc->tstate, now) != 0)
		memcpy(now, pc->sig, sizeof(pc->sig));  /* unread: no change known */
	now[AIO_SIG_WORDS] = running;
	moved = (pc->ran && running != pc->ran) || !seen ||
		(pc->has_sig && memcmp(now, pc->sig, sizeof(pc->sig)) != 0);
	settled = moved && pc->looked && memcmp(now, pc->look, sizeof(now)) == 0;
	pc->looked = moved;
	memcpy(pc->look, now, sizeof(now));
	return settled;
}

void async_idle_new_window(struct async_state *s)
{
	for (int i = 0; s && i < IDLE_THREADS; i++)
		s->pace[i].valid = false;
}

void async_idle_free(struct async_state *s)
{
	for (int i = 0; i < IDLE_THREADS; i++) {
		free(s->pace[i].ids);
		free(s->pace[i].tasks);
	}
}

int async_idle_tick(struct async_state *s, struct pyproc *p, uint64_t tstate,
		    const struct async_sink *k, struct async_stats *st)
{
	struct aio_mem m = { read_mem, p->r };
	struct aio_source src = { tstate + s->l.ts_tasks_head, 0, 0 };
	struct idle d = { p, &s->g, k, NULL, NULL };
	struct idle_pace *pc;
	uint64_t t0 = mono_ns();
	bool again, early = false;
	int err;

	if (!s->ok || k->nroot > 4)
		return 0;
	pc = pace_of(s, tstate);
	/*
	 * Between reads, a change the tick can see cheaply (changed()) reads at
	 * once, so tasks made after a read are counted from the next tick on,
	 * not up to IDLE_GAP read times later. Not twice in a row: the read
	 * after an early one waits EARLY_GAP times the early one's time, and no
	 * less than the regular one was due. Two reads of equal time r then take
	 * at least 14 r (r + r + 12 r): at most a seventh of the time goes to
	 * reading while tasks keep changing, an eleventh as before when not.
	 */
	if (pc && pc->valid && t0 < pc->next_ns) {
		early = !pc->early && changed(s, p, pc, k->running);
		if (!early) {
			credit(pc, k, st);
			return 0;
		}
	}
	/*
	 * A window closed since this thread's list was read, and none other
	 * read since: the graph kept is counted into the new aggregate (names
	 * and lines, no walk of the lists), the read still paced.
	 */
	again = !early && pc && t0 < pc->next_ns && s->g.tasks && s->g_tstate == tstate;
	if (!s->g.tasks && aio_graph_init(&s->g) != 0)
		return -PBP_E_NOMEM;
	if (pc) {
		pc->nids = 0;
		pc->valid = false;
		pc->ran = 0;
		d.pc = pc;
	}
	if (pc && !again) {
		/* The words before the read: a change while it walks reads again soon. */
		pc->looked = false;
		if (s->l.legacy && aio_legacy_registries(p, s->md, s->reg) != 0)
			s->reg[0] = 0;
		pc->has_sig = probe(s, p, tstate, pc->sig) == 0;
	}
	remote_invalidate_all(p->r);
	remote_cache_mutable(p->r, true);
	err = again ? 0 : read_graph(s, p, tstate, &m, &src, st);
	if (!err)
		err = count_all(&d, st);
	remote_cache_mutable(p->r, false);
	st->missed += s->g.st.beyond;
	if (pc) {
		pc->beyond = s->g.st.beyond;
		pc->valid = !err;
		if (!again) {
			uint64_t end = mono_ns(), next = end + (early ? EARLY_GAP : IDLE_GAP) * (end - t0);

			pc->next_ns = early && pc->next_ns > next ? pc->next_ns : next;
			pc->early = early;
		}
	}
	st->graph_ns += again ? 0 : mono_ns() - t0;
	return err;
}
