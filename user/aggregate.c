/* SPDX-License-Identifier: MIT */
/*
 * Aggregation: each distinct location (function, file, line) and each
 * distinct stack is stored once; a sample only bumps a count. Memory grows
 * with the number of distinct stacks, never with the run's length.
 */
#include <stdlib.h>
#include <string.h>

#include "pyprof.h"

struct loc {
	const char *name, *file;    /* interned */
	int line;
	uint32_t kind;
};

struct stack {
	uint64_t hash;
	uint64_t count;
	uint32_t off, n;            /* into agg->pool */
	struct stack_tags tags;
};

struct name {
	uint64_t key;               /* pid << 32 | tid; 0 = empty */
	const char *name;           /* interned */
};

struct agg {
	/* strings */
	char **strs;
	uint32_t nstrs, capstrs;
	uint32_t *strtab;           /* open addressing, index+1, 0 = empty */
	uint32_t strtab_cap;
	/* locations */
	struct loc *locs;
	uint32_t nlocs, caplocs;
	uint32_t *loctab;
	uint32_t loctab_cap;
	/* stacks */
	struct stack *stacks;
	uint32_t nstacks, capstacks;
	uint32_t *stacktab;
	uint32_t stacktab_cap;
	uint32_t *pool;
	size_t npool, cappool;
	uint64_t total;
	/* thread names, open addressing */
	struct name *names;
	uint32_t nnames, capnames;
	/* processes, few: a list */
	struct proc_meta *procs;
	uint32_t nprocs, capprocs;
};

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	/* FNV-1a: short keys, and quality is enough for power-of-two tables. */
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define HASH_SEED 0xcbf29ce484222325ull

static int grow(void **arr, uint32_t *cap, size_t elem, uint32_t need)
{
	uint32_t ncap = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -PBP_E_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Rebuild an index table of `cap` slots over n items with the given hashes. */
typedef uint64_t (*hash_of_fn)(struct agg *a, uint32_t i);

static int rehash(struct agg *a, uint32_t **tab, uint32_t *cap, uint32_t n, hash_of_fn h)
{
	uint32_t ncap = *cap ? *cap * 2 : 256;
	uint32_t *t;

	if ((uint64_t)(n + 1) * 10 < (uint64_t)*cap * 7)
		return 0;
	t = calloc(ncap, sizeof(*t));
	if (!t)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = (uint32_t)h(a, i) & (ncap - 1);

		while (t[s])
			s = (s + 1) & (ncap - 1);
		t[s] = i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = ncap;
	return 0;
}

static uint64_t str_hash_of(struct agg *a, uint32_t i)
{
	return hash_bytes(a->strs[i], strlen(a->strs[i]), HASH_SEED);
}

static uint64_t loc_hash(const char *name, const char *file, int line, uint32_t kind)
{
	uint64_t h = hash_bytes(&name, sizeof(name), HASH_SEED);

	h = hash_bytes(&file, sizeof(file), h);
	h = hash_bytes(&line, sizeof(line), h);
	return hash_bytes(&kind, sizeof(kind), h);
}

static uint64_t loc_hash_of(struct agg *a, uint32_t i)
{
	const struct loc *l = &a->locs[i];

	return loc_hash(l->name, l->file, l->line, l->kind);
}

static uint64_t stack_hash_of(struct agg *a, uint32_t i)
{
	return a->stacks[i].hash;
}

struct agg *agg_new(void)
{
	return calloc(1, sizeof(struct agg));
}

static void agg_clear(struct agg *a)
{
	for (uint32_t i = 0; i < a->nstrs; i++)
		free(a->strs[i]);
	free(a->strs);
	free(a->strtab);
	free(a->locs);
	free(a->loctab);
	free(a->stacks);
	free(a->stacktab);
	free(a->pool);
	free(a->names);
	free(a->procs);
	memset(a, 0, sizeof(*a));
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	agg_clear(a);
	free(a);
}

void agg_reset(struct agg *a)
{
	agg_clear(a);
}

static const char *intern(struct agg *a, const char *s)
{
	uint64_t h = hash_bytes(s, strlen(s), HASH_SEED);
	uint32_t slot;
	char *copy;

	if (rehash(a, &a->strtab, &a->strtab_cap, a->nstrs, str_hash_of))
		return NULL;
	for (slot = h & (a->strtab_cap - 1); a->strtab[slot]; slot = (slot + 1) & (a->strtab_cap - 1))
		if (strcmp(a->strs[a->strtab[slot] - 1], s) == 0)
			return a->strs[a->strtab[slot] - 1];
	if (grow((void **)&a->strs, &a->capstrs, sizeof(*a->strs), a->nstrs + 1))
		return NULL;
	copy = strdup(s);
	if (!copy)
		return NULL;
	a->strs[a->nstrs++] = copy;
	a->strtab[slot] = a->nstrs;
	return copy;
}

int64_t agg_loc(struct agg *a, const char *name, const char *file, int line, uint32_t kind)
{
	const char *n = intern(a, name), *f = intern(a, file ? file : "");
	uint64_t h;
	uint32_t slot;

	if (!n || !f)
		return -PBP_E_NOMEM;
	if (rehash(a, &a->loctab, &a->loctab_cap, a->nlocs, loc_hash_of))
		return -PBP_E_NOMEM;
	h = loc_hash(n, f, line, kind);
	for (slot = h & (a->loctab_cap - 1); a->loctab[slot]; slot = (slot + 1) & (a->loctab_cap - 1)) {
		const struct loc *l = &a->locs[a->loctab[slot] - 1];

		if (l->name == n && l->file == f && l->line == line && l->kind == kind)
			return a->loctab[slot] - 1;
	}
	if (grow((void **)&a->locs, &a->caplocs, sizeof(*a->locs), a->nlocs + 1))
		return -PBP_E_NOMEM;
	a->locs[a->nlocs] = (struct loc){ n, f, line, kind };
	a->loctab[slot] = ++a->nlocs;
	return a->nlocs - 1;
}

int agg_add(struct agg *a, const struct stack_tags *tags, const uint32_t *locs, uint32_t n,
	    uint64_t count)
{
	uint64_t h = hash_bytes(locs, (size_t)n * sizeof(*locs), hash_bytes(tags, sizeof(*tags), HASH_SEED ^ n));
	uint32_t slot;
	struct stack *s;

	if (rehash(a, &a->stacktab, &a->stacktab_cap, a->nstacks, stack_hash_of))
		return -PBP_E_NOMEM;
	for (slot = h & (a->stacktab_cap - 1); a->stacktab[slot]; slot = (slot + 1) & (a->stacktab_cap - 1)) {
		s = &a->stacks[a->stacktab[slot] - 1];
		if (s->hash == h && s->n == n && memcmp(&s->tags, tags, sizeof(*tags)) == 0 &&
		    memcmp(a->pool + s->off, locs, n * sizeof(*locs)) == 0) {
			s->count += count;
			a->total += count;
			return 0;
		}
	}
	if (grow((void **)&a->stacks, &a->capstacks, sizeof(*a->stacks), a->nstacks + 1))
		return -PBP_E_NOMEM;
	if (a->npool + n > a->cappool) {
		size_t ncap = a->cappool ? a->cappool : 1024;
		uint32_t *p;

		while (ncap < a->npool + n)
			ncap *= 2;
		p = realloc(a->pool, ncap * sizeof(*p));
		if (!p)
			return -PBP_E_NOMEM;
		a->pool = p;
		a->cappool = ncap;
	}
	memcpy(a->pool + a->npool, locs, n * sizeof(*locs));
	a->stacks[a->nstacks] = (struct stack){ h, count, (uint32_t)a->npool, n, *tags };
	a->npool += n;
	a->stacktab[slot] = ++a->nstacks;
	a->total += count;
	return 0;
}

uint64_t agg_total(const struct agg *a)
{
	return a->total;
}

uint32_t agg_nstacks(const struct agg *a)
{
	return a->nstacks;
}

uint32_t agg_nlocs(const struct agg *a)
{
	return a->nlocs;
}

const uint32_t *agg_stack(const struct agg *a, uint32_t i, uint32_t *n, uint64_t *count,
			  const struct stack_tags **tags)
{
	*n = a->stacks[i].n;
	*count = a->stacks[i].count;
	if (tags)
		*tags = &a->stacks[i].tags;
	return a->pool + a->stacks[i].off;
}

void agg_loc_info(const struct agg *a, uint32_t id, const char **name, const char **file, int *line,
		  uint32_t *kind)
{
	const struct loc *l = &a->locs[id];

	*name = l->name;
	*file = l->file;
	*line = l->line;
	*kind = l->kind;
}

static uint32_t name_slot(const struct agg *a, uint64_t key)
{
	uint32_t s = (uint32_t)(hash_bytes(&key, sizeof(key), HASH_SEED) & (a->capnames - 1));

	while (a->names[s].key && a->names[s].key != key)
		s = (s + 1) & (a->capnames - 1);
	return s;
}

int agg_set_thread_name(struct agg *a, uint32_t pid, uint32_t tid, const char *name)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	const char *n = intern(a, name);
	uint32_t s;

	if (!n || !key)
		return -PBP_E_NOMEM;
	if ((uint64_t)(a->nnames + 1) * 10 >= (uint64_t)a->capnames * 7) {
		struct name *old = a->names;
		uint32_t oldcap = a->capnames;

		a->capnames = oldcap ? oldcap * 2 : 64;
		a->names = calloc(a->capnames, sizeof(*a->names));
		if (!a->names) {
			a->names = old, a->capnames = oldcap;
			return -PBP_E_NOMEM;
		}
		for (uint32_t i = 0; i < oldcap; i++)
			if (old[i].key)
				a->names[name_slot(a, old[i].key)] = old[i];
		free(old);
	}
	s = name_slot(a, key);
	if (!a->names[s].key)
		a->nnames++;
	a->names[s] = (struct name){ key, n };
	return 0;
}

const char *agg_thread_name(const struct agg *a, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint32_t s;

	if (!a->capnames)
		return NULL;
	s = name_slot(a, key);
	return a->names[s].key ? a->names[s].name : NULL;
}

int agg_set_process(struct agg *a, uint32_t pid, const char *version, const char *container,
		    const char *pod)
{
	struct proc_meta m = { pid, intern(a, version ? version : ""),
			       intern(a, container ? container : ""), intern(a, pod ? pod : "") };

	if (!m.version || !m.container || !m.pod)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == pid) {
			a->procs[i] = m;
			return 0;
		}
	if (grow((void **)&a->procs, &a->capprocs, sizeof(*a->procs), a->nprocs + 1))
		return -PBP_E_NOMEM;
	a->procs[a->nprocs++] = m;
	return 0;
}

const struct proc_meta *agg_process(const struct agg *a, uint32_t pid)
{
	for (uint32_t i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	return NULL;
}

const char *status_label(uint32_t status)
{
	static const char *const labels[] = {
		[ST_RUNNING] = "[running]",
		[ST_NATIVE] = "[native, no GIL]",
		[ST_RUNNABLE] = "[runnable]",
		[ST_GIL_WAIT] = "[gil wait]",
		[ST_SLEEPING] = "[sleeping]",
		[ST_DISK] = "[disk]",
		[ST_UNKNOWN] = "[unknown]",
	};

	return status < ST__COUNT ? labels[status] : "[unknown]";
}
