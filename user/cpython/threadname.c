/* SPDX-License-Identifier: MIT */
/*
 * Python-level thread names (threading.Thread.name), read from outside like
 * everything else, without stopping the target:
 *
 *   interp->modules (3.12+: interp->imports.modules)   sys.modules, a dict
 *     ["threading"]                                     the module object
 *       ->md_dict["_active"]        {ident (int): Thread}, running threads
 *       ->md_dict["_limbo"]         {Thread: Thread}, started, not yet in _active
 *         Thread's attribute "_name"                    a str
 *
 * An ident is threading.get_ident(), the pthread_t that tstate->thread_id
 * also holds. The dicts, ints, types and instance attributes on the way are
 * read by objects.c.
 *
 * All of it is the target's mutable memory read while it runs: the types of
 * what is found are checked by their tp_flags, and whatever does not make
 * sense makes that thread's name unknown, nothing worse.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "cpython/threadname.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/search.h"
#include "core/text.h"
#include "cpython/objects.h"
#include "cpython/process.h"
#include "cpython/pystr.h"
#include "cpython/pyver.h"
#include "cpython/thread.h"
#include "proc/remote.h"

#define NAME_CHARS 64           /* characters of a name read: more never fit in 63 bytes */
#define NAME_TRIES 8            /* reads of the registries before settling for less */
#define REGISTRY_TTL_NS 30000000000ull

static bool fatal(int err)
{
	return err == -PBP_E_GONE || err == -PBP_E_PERM || err == -PBP_E_NOMEM;
}

static struct pyname_cache *cache_slot(struct pyproc *p, uint64_t interp)
{
	for (size_t i = 0; i < PBP_NAME_CACHE; i++)
		if (p->names[i].interp == interp)
			return &p->names[i];
	return NULL;
}

/*
 * The cached module still is what it was: the interpreter has the same
 * sys.modules, the module the same type and the same dict of the same type.
 */
static bool cache_valid(struct pyproc *p, const struct pyname_cache *c)
{
	uint64_t type, dict, modules;

	return remote_ptr(p->r, c->interp + p->v.is_modules, &modules) == 0 &&
	       modules == c->modules &&
	       pyobj_type(p, c->module, &type) == 0 && type == c->module_type &&
	       remote_ptr(p->r, c->module + p->v.mod_dict, &dict) == 0 && dict == c->dict &&
	       pyobj_type(p, c->dict, &type) == 0 && type == c->dict_type;
}

/* threading's module dict, and the type a dict has in this interpreter. */
static int threading_dict(struct pyproc *p, uint64_t interp, uint64_t *md, uint64_t *dict_type)
{
	const struct pyver *v = &p->v;
	struct pyname_cache *c = cache_slot(p, interp), fresh = { .interp = interp };
	uint64_t flags, type;
	int err;

	if (c && cache_valid(p, c)) {
		if (mono_ns() - c->registry_ns >= REGISTRY_TTL_NS) {
			c->registry[0] = c->registry[1] = 0;
			c->registry_ns = mono_ns();
		}
		*md = c->dict;
		*dict_type = c->dict_type;
		return 0;
	}
	if (c)
		memset(c, 0, sizeof(*c));
	err = remote_ptr(p->r, interp + v->is_modules, &fresh.modules);
	if (!err && !fresh.modules)
		err = -PBP_E_NOENT;     /* not initialized yet, or finalized */
	if (!err)
		err = pyobj_type(p, fresh.modules, &fresh.dict_type);
	if (!err)
		err = remote_read_cached(p->r, fresh.dict_type + v->tp_flags, &flags, sizeof(flags));
	if (!err && !(flags & v->tpf_dict_subclass))
		err = -PBP_E_CORRUPT;
	if (!err)
		err = pydict_get_str(p, fresh.modules, "threading", &fresh.module);
	if (!err)
		err = pyobj_type(p, fresh.module, &fresh.module_type);
	if (!err)
		err = remote_ptr(p->r, fresh.module + v->mod_dict, &fresh.dict);
	if (!err)
		err = pyobj_type(p, fresh.dict, &type);
	if (!err && type != fresh.dict_type)
		err = -PBP_E_CORRUPT;
	if (err)
		return err;
	c = &p->names[p->names_next++ % PBP_NAME_CACHE];
	fresh.registry_ns = mono_ns();
	*c = fresh;
	*md = fresh.dict;
	*dict_type = fresh.dict_type;
	return 0;
}

struct collect {
	struct pythread_name *out;
	uint64_t *thread;       /* the Thread object out[i] was read from */
	size_t max, *n;
};

/* Thread object's _name into name (64 bytes). */
static int thread_name(struct pyproc *p, uint64_t thread, char *name, size_t len)
{
	uint64_t str, flags;
	int err = pyobj_attr(p, thread, "_name", &str);

	if (!err)
		err = pyobj_type_flags(p, str, &flags);
	if (!err && !(flags & p->v.tpf_unicode_subclass))
		err = -PBP_E_CORRUPT;
	if (!err)
		/* Made at run time, maybe in a page cached before it existed. */
		err = pystr_read_fresh(p->r, &p->v, str, NAME_CHARS, name, len);
	if (!err)
		utf8_scrub(name);       /* a str may hold lone surrogates */
	return err;
}

static bool listed(const struct collect *c, uint64_t ident)
{
	for (size_t i = 0; i < *c->n; i++)
		if (c->out[i].ident == ident)
			return true;
	return false;
}

static int add(struct pyproc *p, struct collect *c, uint64_t ident, uint64_t thread)
{
	struct pythread_name *o;
	int err;

	if (*c->n >= c->max)
		return 1;               /* full: stop */
	if (listed(c, ident))
		return 0;
	o = &c->out[*c->n];
	err = thread_name(p, thread, o->name, sizeof(o->name));
	if (err)
		return fatal(err) ? err : 0;    /* this one stays unnamed */
	o->ident = ident;
	o->thread = thread;
	c->thread[*c->n] = thread;
	(*c->n)++;
	return 0;
}

/* _active: {ident: Thread}. */
static int active_cb(struct pyproc *p, uint64_t key, uint64_t value, void *arg)
{
	uint64_t ident;
	int err = pylong_read(p, key, &ident);

	if (err)
		return fatal(err) ? err : 0;
	return add(p, arg, ident, value);
}

/* _limbo: {Thread: Thread}; a thread already running has its _ident set. */
static int limbo_cb(struct pyproc *p, uint64_t key, uint64_t value, void *arg)
{
	uint64_t obj, ident;
	int err = pyobj_attr(p, value, "_ident", &obj);

	(void)key;
	if (!err)       /* None (-PBP_E_NOENT) until the thread runs */
		err = pylong_read(p, obj, &ident);
	if (err)
		return fatal(err) ? err : 0;
	return add(p, arg, ident, value);
}

/* The table a dict's entries are in now. */
static int dict_tables(struct pyproc *p, uint64_t dict, uint64_t *keys, uint64_t *values)
{
	int err = remote_ptr(p->r, dict + p->v.dict_keys, keys);

	return err ? err : remote_ptr(p->r, dict + p->v.dict_values, values);
}

/*
 * md[name] if it is a dict, scanned with fn. A dict that got a new table
 * during the scan (it grows and is rebuilt as threads come and go, and the
 * old table, freed, may be anything by then) is -PBP_E_CORRUPT: try again.
 */
/* Where the address of md[name] is kept (see struct pyname_cache), NULL if nowhere. */
static uint64_t *registry_kept(struct pyproc *p, uint64_t md, const char *name)
{
	for (size_t i = 0; i < PBP_NAME_CACHE; i++)
		if (p->names[i].interp && p->names[i].dict == md)
			return &p->names[i].registry[strcmp(name, "_limbo") == 0];
	return NULL;
}

static int scan_registry(struct pyproc *p, uint64_t md, uint64_t dict_type, const char *name,
			 pydict_entry_fn fn, void *arg)
{
	uint64_t dict = 0, type, keys, values, keys2, values2, *kept = registry_kept(p, md, name);
	int err = kept && *kept ? (dict = *kept, 0) : pydict_get_str(p, md, name, &dict);

	if (kept)
		*kept = 0;      /* kept again below, once it read as a dict */

	if (!err)
		err = pyobj_type(p, dict, &type);
	if (!err && type != dict_type)
		err = -PBP_E_CORRUPT;
	if (!err && kept)
		*kept = dict;
	if (!err)
		err = dict_tables(p, dict, &keys, &values);
	if (!err)
		err = pydict_scan(p, dict, fn, arg);
	if (err < 0)
		return err;
	err = dict_tables(p, dict, &keys2, &values2);
	if (!err && (keys2 != keys || values2 != values))
		err = -PBP_E_CORRUPT;
	return err;
}

static bool retryable(int err)
{
	return err == -PBP_E_FAULT || err == -PBP_E_CORRUPT;
}

/* One read of _active, then _limbo, into c. */
static int collect_names(struct pyproc *p, uint64_t md, uint64_t dict_type, struct collect *c)
{
	int err = scan_registry(p, md, dict_type, "_active", active_cb, c), err2;

	if (fatal(err))
		return err;
	/* Threads between start() and their first line: only _limbo has them. */
	err2 = scan_registry(p, md, dict_type, "_limbo", limbo_cb, c);
	if (fatal(err2) || (!err && retryable(err2)))
		return err2;
	return err;
}

struct by_thread {
	uint64_t thread;
	size_t i;               /* index into the collect */
};

struct confirm {
	const struct collect *c;
	struct by_thread *order;        /* sorted by thread */
	size_t n;
	bool *seen;
};

/* Read again, the ident and name of a registered Thread are those read before. */
static int same_again(struct pyproc *p, uint64_t key, uint64_t thread, const struct pythread_name *was,
		      bool *same)
{
	struct pythread_name now;
	uint64_t obj;
	int err;

	*same = false;
	if (key == thread) {    /* _limbo: {Thread: Thread} */
		err = pyobj_attr(p, thread, "_ident", &obj);
		if (!err)
			err = pylong_read(p, obj, &now.ident);
	} else {
		err = pylong_read(p, key, &now.ident);
	}
	if (!err)
		err = thread_name(p, thread, now.name, sizeof(now.name));
	if (err)
		return fatal(err) ? err : 0;
	*same = now.ident == was->ident && strcmp(now.name, was->name) == 0;
	return 0;
}

static int by_thread_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct by_thread *)a)->thread, y = ((const struct by_thread *)b)->thread;

	return x < y ? -1 : x > y;
}

static bool thread_below(const void *elem, const void *thread)
{
	return ((const struct by_thread *)elem)->thread < *(const uint64_t *)thread;
}

/* A registry's Thread: the names read from it stand if it still has them. */
static int confirm_cb(struct pyproc *p, uint64_t key, uint64_t value, void *arg)
{
	struct confirm *f = arg;
	size_t lo = search_first(f->order, f->n, sizeof(*f->order), &value, thread_below);

	for (; lo < f->n && f->order[lo].thread == value; lo++) {
		size_t i = f->order[lo].i;
		bool same;
		int err;

		if (f->seen[i])
			continue;
		err = same_again(p, key, value, &f->c->out[i], &same);
		if (err)
			return err;
		f->seen[i] = same;
	}
	return 0;
}

/*
 * Keep only the names of Threads that _active or _limbo still hold, with
 * the same ident and name. Every object on the way to a name was read at a
 * different instant: the keys table may have been freed under the scan (a
 * dict is resized as threads come and go, and its old table keeps its
 * entries until reused), an entry's thread may have exited and its Thread
 * been freed and the memory reused, maybe by a Thread not set up yet, its
 * name then being anything. A Thread registered now is set up, and what is
 * read from it twice, the registry read in between, is what it holds.
 */
static int confirm_names(struct pyproc *p, uint64_t md, uint64_t dict_type, struct collect *c)
{
	struct confirm f = { c, calloc(*c->n + 1, sizeof(*f.order)), *c->n,
			     calloc(*c->n + 1, sizeof(*f.seen)) };
	size_t kept = 0;
	int err = 0;

	if (!f.order || !f.seen)
		err = -PBP_E_NOMEM;
	for (size_t i = 0; !err && i < f.n; i++)
		f.order[i] = (struct by_thread){ c->thread[i], i };
	if (!err) {
		qsort(f.order, f.n, sizeof(*f.order), by_thread_cmp);
		err = scan_registry(p, md, dict_type, "_active", confirm_cb, &f);
	}
	if (!err || err == -PBP_E_NOENT)       /* no such registry: it confirms nothing */
		err = scan_registry(p, md, dict_type, "_limbo", confirm_cb, &f);
	if (err == -PBP_E_NOENT)
		err = 0;
	for (size_t i = 0; !err && i < f.n; i++) {
		if (!f.seen[i])
			continue;
		c->out[kept] = c->out[i];
		c->thread[kept++] = c->thread[i];
	}
	if (!err)
		*c->n = kept;
	free(f.order);
	free(f.seen);
	return err;
}

/* Confirmed names of one read into out: the latest name of each ident. */
static void merge_names(struct pythread_name *out, size_t max, size_t *n,
			const struct pythread_name *got, size_t ngot)
{
	for (size_t k = 0; k < ngot; k++) {
		size_t j = 0;

		while (j < *n && out[j].ident != got[k].ident)
			j++;
		if (j < *n)
			out[j] = got[k];
		else if (*n < max)
			out[(*n)++] = got[k];
	}
}

int pythread_names(struct pyproc *p, uint64_t interp, struct pythread_name *out, size_t max,
		   size_t *n)
{
	const struct pyver *v = &p->v;
	struct collect c = { NULL, NULL, max, NULL };
	uint64_t md, dict_type;
	size_t got = 0;
	int err;

	*n = 0;
	if (v->is_modules == PYVER_NOOFF || v->mod_dict == PYVER_NOOFF || v->dict_keys == PYVER_NOOFF ||
	    v->dict_values == PYVER_NOOFF)
		return -PBP_E_VERSION;
	if (!interp)
		return -PBP_E_CORRUPT;
	err = threading_dict(p, interp, &md, &dict_type);
	if (err)
		return err;
	c.out = calloc(max ? max : 1, sizeof(*c.out));
	c.thread = calloc(max ? max : 1, sizeof(*c.thread));
	c.n = &got;
	if (!c.out || !c.thread)
		err = -PBP_E_NOMEM;
	/*
	 * The registries change while they are read: a read that faults, or
	 * during which a registry got a new table, is done again, up to
	 * NAME_TRIES times. The names each read confirms add up: a thread
	 * missed by one (in a table being rebuilt) is found by another.
	 */
	/*
	 * The registries, their entries, the Threads and their dicts share a few
	 * pages: read by the page, each pass in an epoch of its own, so that the
	 * confirming pass sees memory anew.
	 */
	remote_cache_mutable(p->r, true);
	for (int i = 0; !err && i < NAME_TRIES; i++) {
		got = 0;
		remote_invalidate_all(p->r);
		err = collect_names(p, md, dict_type, &c);
		if (!fatal(err)) {
			int err2;

			remote_invalidate_all(p->r);
			err2 = confirm_names(p, md, dict_type, &c);

			if (err2) {
				got = 0;        /* not confirmed: none of it stands */
				if (!err || fatal(err2))
					err = err2;
			}
		}
		if (fatal(err))
			break;
		merge_names(out, max, n, c.out, got);
		if (!retryable(err))
			break;
		if (i + 1 < NAME_TRIES)
			err = 0;
	}
	remote_cache_mutable(p->r, false);
	free(c.out);
	free(c.thread);
	if (!fatal(err) && *n > 0)
		err = 0;
	if (fatal(err))
		*n = 0;
	/* A cached module that no longer holds what it did: look it up again next time. */
	if (err && !fatal(err)) {
		struct pyname_cache *slot = cache_slot(p, interp);

		if (slot)
			memset(slot, 0, sizeof(*slot));
	}
	return err;
}

/*
 * A thread renamed (t.name = ...) gets a new str in its Thread's _name: the
 * name read there again is the whole check. Its content is compared, not
 * the str's address: a second rename may make its str where the first's
 * was freed. The Thread is the one its registry held when its thread was
 * named, alive while that thread runs.
 */
bool pythread_name_same(struct pyproc *p, uint64_t thread, const char *name)
{
	char now[PBP_NAME_LEN];
	bool same;

	remote_cache_mutable(p->r, true);
	same = thread && thread_name(p, thread, now, sizeof(now)) == 0 && strcmp(now, name) == 0;
	remote_cache_mutable(p->r, false);
	return same;
}

/* Names of every thread in ts (names[i], "" where unknown), read once per interpreter. */
void pythreads_name_all(struct pyproc *p, const struct pythread *ts, size_t n,
			char (*names)[PBP_NAME_LEN], uint64_t *objs)
{
	size_t max = n + 16, got;
	struct pythread_name *buf = calloc(max, sizeof(*buf));

	for (size_t i = 0; i < n; i++) {
		names[i][0] = '\0';
		if (objs)
			objs[i] = 0;
	}
	for (size_t i = 0; buf && i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = ts[j].interp == ts[i].interp;
		if (seen || pythread_names(p, ts[i].interp, buf, max, &got) != 0)
			continue;
		for (size_t k = 0; k < got; k++)
			for (size_t t = i; t < n; t++)
				if (ts[t].interp == ts[i].interp && ts[t].ident && ts[t].ident == buf[k].ident) {
					snprintf(names[t], PBP_NAME_LEN, "%s", buf[k].name);
					if (objs)
						objs[t] = buf[k].thread;
				}
	}
	free(buf);
}
