/* SPDX-License-Identifier: MIT */
/*
 * asyncstack.c: `--async` stacks. A sample of a thread whose event loop runs
 * a task gets that task, and the tasks awaiting it, as frames "task NAME"
 * between the loop's frames and the task's coroutine frames:
 *
 *   <module>;run;...;_run;task main;task waiter;waiter;helper;...
 *
 * On 3.14 the kernel copies the running task's address into each sample
 * once the layout is known (pbp_offsets.ts_running_task); its name and
 * awaiters are read when the sample is named, a few milliseconds later.
 * 3.11 to 3.13's thread states hold no running task: the kernel copies the
 * outermost coroutine frame instead (pbp_offsets.coro_owner), which lies
 * inside its coroutine, and the task whose coroutine that is comes from the
 * last read of asyncio's registries (asyncidle.c). Reading _current_tasks
 * when the sample is named instead missed 44% of the samples of a task
 * that ran 2 ms between sleeps: by then it slept. A stack read now (a wall
 * tick), sampled before the kernel was told, or of a task newer than the
 * last read gets the task running now (asyncio_legacy.c reads
 * _current_tasks). Task frames go only where the task's own coroutine is
 * on the stack, so a task that changed in between leaves the sample as it
 * was rather than naming another task.
 */
#include <stdlib.h>
#include <string.h>

#include "sample/asyncstack.h"
#include "sample/asyncstate.h"
#include "aggregate/aggregate.h"
#include "core/clock.h"
#include "core/errors.h"
#include "cpython/asyncio_legacy.h"
#include "cpython/asyncio_tasks.h"
#include "cpython/codeobj.h"
#include "cpython/objects.h"
#include "cpython/process.h"
#include "proc/remote.h"
#include "sample/asyncidle.h"

/*
 * asyncio not loaded yet: looked for again every 25 ms for the first 40
 * looks (a launched program imports it within its first second, and each
 * second waited was samples with no task frame: a 2 s run lost up to half
 * of its tasks' samples), then every second.
 */
#define RETRY_SOON_NS 25000000ull
#define RETRY_SOON_LOOKS 40
#define RETRY_NS 1000000000ull
#define FRAME_OWNED_BY_GENERATOR 1      /* 3.11 to 3.13's frame owner of a coroutine's frame */


void async_state_free(struct async_state *s)
{
	if (s) {
		aio_graph_free(&s->g);
		async_idle_free(s);
	}
	free(s);
}


/* 3.11 to 3.13: the generated layout, with the interpreter of the thread of tstate. */
static int legacy_layout(struct async_state *s, struct pyproc *p, uint64_t tstate)
{
	uint64_t interp;
	int err = remote_ptr(p->r, tstate + p->v.ts_interp, &interp);

	return err ? err : aio_legacy_find(p, interp, &s->l, &s->md);
}

/*
 * 3.11 to 3.13: where a frame's owner byte is, for the kernel to find the
 * outermost coroutine frame; 3.11's (not in the generated table) is the
 * char right after its bool is_entry (Include/internal/pycore_frame.h).
 */
static bool coro_owner(struct pbp_offsets *k)
{
	__u16 off = k->fr_owner != PBP_NOOFF ? k->fr_owner :
		    k->fr_is_entry != PBP_NOOFF ? (__u16)(k->fr_is_entry + 1) : PBP_NOOFF;

	if (off == PBP_NOOFF)
		return false;
	k->coro_owner = off;
	k->owner_gen = FRAME_OWNED_BY_GENERATOR;
	return true;
}

/*
 * The layout, once found; false while there is none (yet, or ever: before
 * 3.11). Found on 3.14, the kernel is to copy the running task into each
 * sample; before, the running task is read when the sample is named.
 */
static bool layout(struct async_state *s, struct pyproc *p, uint64_t tstate, bool *tell)
{
	uint64_t now;
	int err;

	if (s->ok || s->never)
		return s->ok;
	now = mono_ns();
	if (now < s->retry_ns)
		return false;
	err = aio_find_layout(p, &s->l);
	if (err == -PBP_E_VERSION && !tstate)
		return false;   /* 3.11 to 3.13: the registries are found from a thread's interpreter */
	if (err == -PBP_E_VERSION)
		err = legacy_layout(s, p, tstate);
	s->ok = err == 0;
	s->never = err == -PBP_E_VERSION || err == -PBP_E_CORRUPT;
	s->retry_ns = now + (s->looks++ < RETRY_SOON_LOOKS ? RETRY_SOON_NS : RETRY_NS);
	if (s->ok && !s->l.legacy && s->l.ts_running_task < 0xffff) {
		p->v.k.ts_running_task = (__u16)s->l.ts_running_task;
		*tell = true;
	}
	if (s->ok && s->l.legacy)
		*tell = coro_owner(&p->v.k);
	return s->ok;
}

/* The task the thread of tstate runs now. */
static int running_now(struct async_state *s, struct pyproc *p, uint64_t tstate, uint64_t *task)
{
	uint64_t ident;

	if (!s->l.legacy)
		return aio_running_task(p, &s->l, tstate, task);
	if (remote_ptr(p->r, tstate + p->v.ts_thread_id, &ident) != 0)
		return -PBP_E_FAULT;
	return aio_legacy_running(p, &s->l, s->md, ident, task);
}

/*
 * Before 3.14 a task names no awaiter: those of the last read of the graph
 * (asyncidle.c: wall mode's tick, or async_graph_refresh) are taken, when it
 * has the task; else it alone.
 */
static void legacy_chain(const struct async_state *s, uint64_t task, uint64_t *tasks, size_t *n)
{
	const struct aio_graph *g = &s->g;
	size_t i = 0;

	tasks[0] = task;
	*n = 1;
	while (g->tasks && i < g->n && g->tasks[i].addr != task)
		i++;
	while (g->tasks && i < g->n && *n < ASYNC_MAX_TASKS && g->tasks[i].nawaiters) {
		uint32_t next = g->tasks[i].awaiters[0];
		bool seen = false;

		for (size_t k = 0; k < *n; k++)
			seen |= tasks[k] == g->tasks[next].addr;
		if (seen)
			return;
		tasks[(*n)++] = g->tasks[next].addr;
		i = next;
	}
}

/*
 * 3.11 to 3.13: the task whose coroutine holds the kernel's frame, among the
 * last read's tasks, if it is still that task's (memory of a task freed since
 * may hold another by now); 0: none.
 */
static uint64_t task_of_frame(const struct async_state *s, struct pyproc *p, uint64_t frame)
{
	uint64_t coro = frame - p->v.gen_iframe, now, type;

	for (size_t i = 0; s->g.tasks && i < s->g.n; i++) {
		const struct aio_task *t = &s->g.tasks[i];

		if (t->coro == coro)
			return remote_ptr(p->r, t->addr + s->l.task_coro, &now) == 0 && now == coro &&
			       pyobj_type(p, t->addr, &type) == 0 && type == s->l.task_type ? t->addr : 0;
	}
	return 0;
}

/* Where the task's coroutine frame is in locs (root first): the first with its name and file. */
static long coroutine_at(struct pyproc *p, struct agg *a, uint64_t code, const uint32_t *locs,
			 uint32_t n)
{
	int err;
	const struct codeinfo *ci = code ? codecache_get(p->codes, p, code, NULL, &err) : NULL;

	for (uint32_t i = 0; ci && i < n; i++) {
		const char *name, *file;
		int line;
		uint32_t kind;

		agg_loc_info(a, locs[i], &name, &file, &line, &kind);
		if (name && file && strcmp(name, ci->name) == 0 && strcmp(file, ci->file) == 0)
			return (long)i;
	}
	return -1;
}

/*
 * 3.11 to 3.13: the task of the stack locs. The kernel's coroutine frame
 * names it, when the last read has it; else (a stack read now, one sampled
 * before the kernel was told, a task newer than the read) the task running
 * now, when its coroutine is on the stack; else, with no frame from the
 * kernel, the one task of the last read whose coroutine is (none when two
 * are). Failing all, the task running now (async_join counts it unplaced).
 */
static uint64_t legacy_task(struct async_state *s, struct pyproc *p, struct agg *a,
			    const struct async_src *src, const uint32_t *locs, uint32_t n)
{
	uint64_t task = src->coro_frame ? task_of_frame(s, p, src->coro_frame) : 0;
	uint64_t now = 0, found = 0, code = 0;
	bool on = false;

	if (task)
		return task;
	if (running_now(s, p, src->tstate, &now) != 0)
		now = 0;
	if (src->coro_frame || (now && coroutine_at(p, a, aio_task_code(p, &s->l, now), locs, n) >= 0))
		return now;
	for (size_t i = 0; s->g.tasks && i < s->g.n; i++) {
		const struct aio_task *t = &s->g.tasks[i];

		if (!t->nframes)
			continue;
		if (t->frames[0].code != code) {        /* tasks of one coroutine: looked for once */
			code = t->frames[0].code;
			on = coroutine_at(p, a, code, locs, n) >= 0;
		}
		if (on && found)
			return now;     /* two tasks run that coroutine: which one is not known */
		if (on)
			found = t->addr;
	}
	return found ? found : now;
}

/* "task NAME" of each task, outermost awaiter first, into ids. */
static int task_locs(struct pyproc *p, struct agg *a, const struct aio_layout *l,
		     const uint64_t *tasks, size_t nt, uint32_t *ids)
{
	for (size_t i = 0; i < nt; i++) {
		char name[128], frame[140];
		uint64_t obj;
		int64_t id;

		if (remote_ptr(p->r, tasks[nt - 1 - i] + l->task_name, &obj) != 0)
			obj = 0;
		aio_task_name(p, obj, name, sizeof(name));
		snprintf(frame, sizeof(frame), "task %s", name);
		id = agg_loc(a, frame, NULL, -1, LOC_PY);
		if (id < 0)
			return (int)id;
		ids[i] = (uint32_t)id;
	}
	return 0;
}

int async_prepare(struct async_state **sp, struct pyproc *p, uint64_t tstate, bool *tell)
{
	*tell = false;
	if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
		return -PBP_E_NOMEM;
	layout(*sp, p, tstate, tell);
	return 0;
}

int async_join(struct async_state **sp, struct pyproc *p, struct agg *a, const struct async_src *src,
	       uint32_t *locs, uint32_t *n, uint32_t max, struct async_stats *st, bool *tell, bool wall,
	       uint64_t *placed)
{
	uint64_t tasks[ASYNC_MAX_TASKS], task = src->task;
	uint32_t ids[ASYNC_MAX_TASKS];
	size_t nt = 0;
	long at;
	int err;

	*tell = false;
	*placed = 0;
	if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
		return -PBP_E_NOMEM;
	if (!layout(*sp, p, src->tstate, tell))
		return 0;
	if ((*sp)->l.legacy) {
		/* The registries' last read (made here outside wall mode): the frame's task, its awaiters. */
		if ((!wall || !(*sp)->g.tasks) &&
		    async_graph_refresh(*sp, p, src->tstate, st) == -PBP_E_NOMEM)
			return -PBP_E_NOMEM;
		task = legacy_task(*sp, p, a, src, locs, *n);
		if (!task)
			return 0;
		legacy_chain(*sp, task, tasks, &nt);
	} else {
		/* Not the kernel's copy: the task running now, a little after the stack was taken. */
		if (!src->from_kernel && running_now(*sp, p, src->tstate, &task) != 0)
			return 0;
		if (!task || aio_task_chain(p, &(*sp)->l, task, tasks, ASYNC_MAX_TASKS, &nt) != 0 || nt == 0)
			return 0;
	}
	at = coroutine_at(p, a, aio_task_code(p, &(*sp)->l, tasks[0]), locs, *n);
	if (at < 0 || *n + nt > max) {
		st->unplaced++;
		return 0;
	}
	err = task_locs(p, a, &(*sp)->l, tasks, nt, ids);
	if (err)
		return err;
	memmove(locs + at + nt, locs + at, (*n - (uint32_t)at) * sizeof(*locs));
	memcpy(locs + at, ids, nt * sizeof(*ids));
	*n += (uint32_t)nt;
	*placed = tasks[0];
	st->tasked++;
	return 0;
}
