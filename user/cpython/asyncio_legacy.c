/* SPDX-License-Identifier: MIT */
/*
 * asyncio_legacy.c: the asyncio tasks of a 3.11 to 3.13 process, which has
 * no AsyncioDebug table (3.14's) and keeps its tasks in Python objects of
 * the module asyncio.tasks:
 *
 *   3.11       _all_tasks         a weakref.WeakSet of every pending task
 *   3.12, 3.13 _scheduled_tasks   a WeakSet of the tasks not started eagerly
 *              _eager_tasks       a set of those running their first step
 *   all        _current_tasks     a dict {loop: its running task}
 *
 * A WeakSet keeps its weak references in a set (its attribute "data"), each
 * reference's wr_object the task. Only the C task type is read (the module's
 * "Task", _asyncio.Task, whose tp_basicsize must be the size the generated
 * table gives: another build's layout is refused): TaskObj's offsets, the
 * coroutine's and frame's, come from aio_gen_table (gen/offsets.h, probed
 * per version by scripts/gen-offsets.sh). A task's thread is the one whose
 * threading ident its loop's _thread_id holds (set while the loop runs).
 *
 * Everything is read while the process runs: the registries are bounded
 * (AIO_MAX_REGISTRY slots a set), and anything that is not what it should be is
 * skipped; the walk itself (asyncio_graph.c) counts its own failures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/asyncio_legacy.h"
#include "core/errors.h"
#include "cpython/objects.h"
#include "cpython/gen/offsets.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "cpython/thread.h"
#include "proc/remote.h"

#define MAX_LOOPS 16            /* loops whose thread is remembered during one read */

struct legacy {
	struct pyproc *p;
	const struct aio_layout *l;
	const struct aio_gen *gen;
	const struct pythread *ts;
	size_t nts;
	struct aio_given *out;
	size_t n;
	unsigned beyond;        /* tasks past AIO_MAX_TASKS */
	uint64_t wr_type;       /* weakref.ReferenceType, once seen */
	uint64_t running[MAX_LOOPS];    /* _current_tasks' values */
	size_t nrunning;
	uint64_t loops[MAX_LOOPS];
	int loop_owner[MAX_LOOPS];
	size_t nloops;
};

static const struct aio_gen *gen_of(const struct pyver *v)
{
	for (size_t i = 0; i < sizeof(aio_gen_table) / sizeof(aio_gen_table[0]); i++)
		if (v->major == 3 && aio_gen_table[i].minor == v->minor)
			return &aio_gen_table[i];
	return NULL;
}

static bool type_named(struct pyproc *p, uint64_t type, const char *want)
{
	uint64_t name;
	char got[32];
	size_t len = strlen(want) + 1;

	return len <= sizeof(got) && remote_ptr(p->r, type + p->v.ob_type + 16, &name) == 0 &&
	       remote_read(p->r, name, got, len) == 0 && memcmp(got, want, len) == 0;
}

/* asyncio.tasks' module dict, from sys.modules of the interpreter interp. */
static int tasks_module(struct pyproc *p, uint64_t interp, uint64_t *md)
{
	const struct pyver *v = &p->v;
	uint64_t modules, mod;
	int err;

	if (v->is_modules == PYVER_NOOFF)
		return -PBP_E_VERSION;
	err = remote_ptr(p->r, interp + v->is_modules, &modules);
	if (!err && !modules)
		err = -PBP_E_NOENT;
	if (!err)
		err = pydict_get_str(p, modules, "asyncio.tasks", &mod);
	if (!err)
		err = remote_ptr(p->r, mod + v->mod_dict, md);
	return err;
}

int aio_legacy_find(struct pyproc *p, uint64_t interp, struct aio_layout *l, uint64_t *md)
{
	const struct aio_gen *gen = gen_of(&p->v);
	uint64_t task, size;
	int err;

	if (!gen)
		return -PBP_E_VERSION;
	err = tasks_module(p, interp, md);
	if (!err)
		err = pydict_get_str(p, *md, "Task", &task);
	if (err)
		return err == -PBP_E_VERSION ? err : -PBP_E_NOENT;
	/* The C task, of the very layout the table gives; else no reading it. */
	if (!type_named(p, task, "_asyncio.Task") ||
	    remote_ptr(p->r, task + p->v.tp_basicsize, &size) != 0 || size != gen->task_size)
		return -PBP_E_VERSION;
	memset(l, 0, sizeof(*l));
	l->legacy = true;
	l->task_type = task;
	l->task_size = gen->task_size;
	l->task_name = gen->task_name;
	l->task_coro = gen->task_coro;
	l->task_loop = gen->task_loop;
	l->task_fut_waiter = gen->task_fut_waiter;
	l->fr_stacktop = gen->fr_stacktop;
	l->fr_localsplus = gen->fr_localsplus;
	p->v.gen_iframe = gen->gen_iframe;
	p->v.gen_frame_state = gen->gen_frame_state;
	return 0;
}

/* The thread index running loop (its _thread_id, a threading ident), -1: none (not running). */
static int owner_of(struct legacy *s, uint64_t loop)
{
	uint64_t tid_obj, ident;
	int owner = -1;

	for (size_t i = 0; i < s->nloops; i++)
		if (s->loops[i] == loop)
			return s->loop_owner[i];
	if (pyobj_attr(s->p, loop, "_thread_id", &tid_obj) == 0 && pylong_read(s->p, tid_obj, &ident) == 0)
		for (size_t i = 0; i < s->nts; i++)
			if (s->ts[i].ident == ident)
				owner = (int)i;
	if (s->nloops < MAX_LOOPS) {
		s->loops[s->nloops] = loop;
		s->loop_owner[s->nloops++] = owner;
	}
	return owner;
}

/* A task of the C type: kept with its loop's thread and whether it runs. */
static void give(struct legacy *s, uint64_t obj)
{
	uint64_t type, loop;
	bool running = false;

	if (pyobj_type(s->p, obj, &type) != 0 || type != s->l->task_type)
		return;         /* a dummy key, a dead reference (None), another type */
	if (s->n >= AIO_MAX_TASKS) {
		s->beyond += s->beyond < AIO_MAX_BEYOND;        /* said, not read */
		return;
	}
	for (size_t i = 0; i < s->nrunning; i++)
		running |= s->running[i] == obj;
	if (remote_ptr(s->p->r, obj + s->l->task_loop, &loop) != 0)
		loop = 0;
	s->out[s->n++] = (struct aio_given){ obj, loop ? owner_of(s, loop) : -1, running };
}

/* A set's keys, weak references (weak) or tasks. Bounded; a bad set gives nothing. */
static void read_set(struct legacy *s, uint64_t set, bool weak)
{
	uint64_t mask, table, key, obj, type;
	uint8_t *t;

	if (remote_ptr(s->p->r, set + s->gen->set_mask, &mask) != 0 || mask >= AIO_MAX_REGISTRY ||
	    (mask & (mask + 1)) != 0 || remote_ptr(s->p->r, set + s->gen->set_table, &table) != 0)
		return;
	t = malloc((mask + 1) * 16);
	if (!t || remote_read(s->p->r, table, t, (mask + 1) * 16) != 0) {
		free(t);
		return;
	}
	for (uint64_t i = 0; i <= mask; i++) {
		memcpy(&key, t + 16 * i, 8);
		if (!key)
			continue;
		if (!weak) {
			give(s, key);
			continue;
		}
		if (pyobj_type(s->p, key, &type) != 0)
			continue;
		if (type != s->wr_type && !(type_named(s->p, type, "weakref.ReferenceType") &&
					    (s->wr_type = type)))
			continue;
		if (remote_ptr(s->p->r, key + s->gen->wr_object, &obj) == 0)
			give(s, obj);
	}
	free(t);
}

static int running_cb(struct pyproc *p, uint64_t key, uint64_t value, void *arg)
{
	struct legacy *s = arg;

	(void)p;
	(void)key;
	if (s->nrunning < MAX_LOOPS)
		s->running[s->nrunning++] = value;
	return 0;
}

/* A registry of the module: a WeakSet (its "data" set) or a set. */
static void read_registry(struct legacy *s, uint64_t md, const char *name, bool weak)
{
	uint64_t obj, set;

	if (pydict_get_str(s->p, md, name, &obj) != 0)
		return;
	if (!weak)
		read_set(s, obj, false);
	else if (pyobj_attr(s->p, obj, "data", &set) == 0)
		read_set(s, set, true);
}

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return remote_read(ctx, addr, buf, len);
}

int aio_legacy_registries(struct pyproc *p, uint64_t md, uint64_t sets[2])
{
	uint64_t obj;

	sets[0] = sets[1] = 0;
	if (pydict_get_str(p, md, p->v.minor == 11 ? "_all_tasks" : "_scheduled_tasks", &obj) != 0 ||
	    pyobj_attr(p, obj, "data", &sets[0]) != 0) {
		sets[0] = 0;
		return -PBP_E_NOENT;
	}
	if (p->v.minor != 11 && pydict_get_str(p, md, "_eager_tasks", &sets[1]) != 0)
		sets[1] = 0;
	return 0;
}

int aio_legacy_sig(struct pyproc *p, const uint64_t sets[2], uint64_t sig[8])
{
	const struct aio_gen *gen = gen_of(&p->v);
	int err = gen && sets[0] ? 0 : -PBP_E_NOENT;

	memset(sig, 0, 8 * sizeof(*sig));
	/* PySetObject's fill is the word before used, in every version that has tasks. */
	for (int i = 0; !err && i < 2; i++)
		if (sets[i])
			err = remote_read(p->r, sets[i] + gen->set_used - 8, sig + 4 * i, 4 * sizeof(*sig));
	return err;
}

/*
 * No awaited_by before 3.14: a gather's children are joined to the task
 * whose _fut_waiter is the gather's future (a _GatheringFuture, what its
 * innermost coroutine awaits too), through the future's _children list,
 * the objects asyncio itself keeps to finish the gather.
 */
static int join_gathers(struct pyproc *p, const struct aio_mem *m, struct aio_graph *g)
{
	struct aio_gather *gs = NULL;
	uint64_t list, type, list_type = 0;
	size_t n = 0;
	int err;

	for (size_t i = 0; i < g->n; i++) {
		const struct aio_task *t = &g->tasks[i];

		if (!t->fut_waiter || t->fut_waiter != t->awaits ||
		    strcmp(t->awaits_name, "_GatheringFuture") != 0 ||
		    pyobj_attr(p, t->fut_waiter, "_children", &list) != 0 || pyobj_type(p, list, &type) != 0)
			continue;
		if (type != list_type && !(type_named(p, type, "list") && (list_type = type)))
			continue;
		if (!gs && !(gs = calloc(g->n, sizeof(*gs))))
			return -PBP_E_NOMEM;
		gs[n++] = (struct aio_gather){ (uint32_t)i, list };
	}
	err = aio_graph_gathers(m, &p->v, gs, n, g);
	free(gs);
	return err;
}

int aio_legacy_tasks(struct pyproc *p, const struct aio_layout *l, uint64_t md,
		     const struct pythread *ts, size_t n, struct aio_graph *g)
{
	struct legacy *s = calloc(1, sizeof(*s));
	struct aio_mem m = { read_mem, p->r };
	uint64_t cur;
	int err;

	if (!s || !(s->out = calloc(AIO_MAX_TASKS, sizeof(*s->out)))) {
		free(s);
		return -PBP_E_NOMEM;
	}
	*s = (struct legacy){ .p = p, .l = l, .gen = gen_of(&p->v), .ts = ts, .nts = n, .out = s->out };
	if (pydict_get_str(p, md, "_current_tasks", &cur) == 0)
		pydict_scan(p, cur, running_cb, s);
	if (p->v.minor == 11) {
		read_registry(s, md, "_all_tasks", true);
	} else {
		read_registry(s, md, "_scheduled_tasks", true);
		read_registry(s, md, "_eager_tasks", false);
	}
	err = aio_graph_read_given(&m, &p->v, l, s->out, s->n, g);
	g->st.beyond += s->beyond;
	g->st.list_long += s->beyond > 0;
	if (!err)
		err = join_gathers(p, &m, g);
	free(s->out);
	free(s);
	return err;
}

struct running_of {
	uint64_t ident, task;
};

/* A loop of _current_tasks: is it the thread's? Its task then. */
static int running_of_cb(struct pyproc *p, uint64_t loop, uint64_t task, void *arg)
{
	struct running_of *r = arg;
	uint64_t tid_obj, ident;

	if (pyobj_attr(p, loop, "_thread_id", &tid_obj) == 0 && pylong_read(p, tid_obj, &ident) == 0 &&
	    ident == r->ident)
		r->task = task;
	return 0;
}

int aio_legacy_running(struct pyproc *p, const struct aio_layout *l, uint64_t md, uint64_t ident,
		       uint64_t *task)
{
	struct running_of r = { ident, 0 };
	uint64_t cur, type;
	int err = pydict_get_str(p, md, "_current_tasks", &cur);

	if (!err)
		err = pydict_scan(p, cur, running_of_cb, &r);
	if (!err && r.task && (pyobj_type(p, r.task, &type) != 0 || type != l->task_type))
		r.task = 0;     /* freed since, or not the C task */
	*task = r.task;
	return err;
}
