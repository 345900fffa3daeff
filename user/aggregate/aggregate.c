/* SPDX-License-Identifier: MIT */
/*
 * Aggregation: each distinct location (function, file, line) and each
 * distinct stack is stored once; a sample only bumps a count. Memory grows
 * with the number of distinct stacks, never with the run's length.
 *
 * Stacks are told apart by thread too, so a process that starts threads all
 * the time (a short-lived thread per request) would add stacks, a name and
 * a label for each of them as long as the run lasts. Hence the thread table
 * below: every process gets AGG_MAX_THREADS identities, then one more for
 * all later threads together, and names of threads never sampled are
 * forgotten oldest first (the profiler names threads as it finds them,
 * mostly threads that are gone before any sample lands in them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/aggdict.h"
#include "aggregate/aggnat.h"
#include "core/unique.h"
#include "core/errors.h"

struct stack {
	uint64_t hash;
	uint64_t count;
	uint32_t off, n;            /* into agg->pool */
	struct stack_tags tags;
};

/* A thread the aggregate knows of: sampled, or only named so far. */
struct athread {
	uint64_t key;               /* pid << 32 | tid */
	char *name;                 /* own copy (freed when forgotten), NULL if never named */
	bool used;                  /* slot taken (key 0 is a valid key: convert's pid 0, tid 0) */
	bool kept;                  /* has an identity of its own in the stacks */
};

/* Per process: how many threads it holds, and which names may be forgotten. */
struct aproc {
	uint32_t pid;
	uint32_t kept;              /* threads with their own identity, at most AGG_MAX_THREADS */
	uint32_t named;             /* threads named but not kept */
	uint64_t folded;            /* samples counted as AGG_OTHER_TID */
	/*
	 * tids in the order they were named while not kept, oldest first; some
	 * have been kept since (skipped when reached), so at most named + kept.
	 */
	uint32_t *q;
	uint32_t qhead, qlen, qcap;
};

struct agg {
	/*
	 * Strings and locations: NULL until the first. A taken aggregate
	 * (agg_take) shares its taker's, reads the nlocs it had, adds none.
	 */
	struct aggdict *d;
	uint32_t nlocs;
	bool taken;
	/* stacks */
	struct stack *stacks;
	uint32_t nstacks, capstacks;
	uint32_t *stacktab;
	uint32_t stacktab_cap;
	uint32_t *pool;
	size_t npool, cappool;
	uint64_t total;
	int64_t last;                /* stack the last agg_add counted into, -1 if none or folded */
	uint64_t epoch;              /* agg_loc_epoch */
	/* threads, open addressing (linear probing: deletion shifts back) */
	struct athread *threads;
	uint32_t nthreads, capthreads;
	struct aproc *tprocs;       /* few, a list; tprocs[last_tproc] was the latest */
	uint32_t ntprocs, captprocs, last_tproc;
	uint32_t *scratch;          /* a folded stack with its thread labels replaced */
	uint32_t capscratch;
	/* processes, few: a list */
	struct proc_meta *procs;
	uint32_t nprocs, capprocs;
	struct aggnat *nat;         /* native locations' mappings, NULL until one is given */
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

static const struct dict_loc *loc_at(const struct agg *a, uint32_t id)
{
	return aggdict_at(a->d, id);
}

static uint64_t stack_hash_of(const void *ctx, uint32_t i)
{
	const struct agg *a = ctx;

	return a->stacks[i].hash;
}

struct agg *agg_new(void)
{
	struct agg *a = calloc(1, sizeof(struct agg));

	if (a)
		agg_reset(a);
	return a;
}

uint64_t agg_loc_epoch(const struct agg *a)
{
	return a->epoch;
}

/* What was counted: stacks, threads and processes; the strings and locations stay. */
static void forget_counts(struct agg *a);

static void clear_counts(struct agg *a)
{
	free(a->stacks);
	free(a->stacktab);
	free(a->pool);
	for (uint32_t i = 0; i < a->capthreads; i++)
		free(a->threads[i].name);
	free(a->threads);
	for (uint32_t i = 0; i < a->ntprocs; i++)
		free(a->tprocs[i].q);
	free(a->tprocs);
	free(a->scratch);
	free(a->procs);
	forget_counts(a);
}

/* Counted nothing, what it held freed or owned elsewhere now. */
static void forget_counts(struct agg *a)
{
	a->stacks = NULL, a->nstacks = a->capstacks = 0;
	a->stacktab = NULL, a->stacktab_cap = 0;
	a->pool = NULL, a->npool = a->cappool = 0;
	a->total = 0;
	a->last = -1;
	a->threads = NULL, a->nthreads = a->capthreads = 0;
	a->tprocs = NULL, a->ntprocs = a->captprocs = a->last_tproc = 0;
	a->scratch = NULL, a->capscratch = 0;
	a->procs = NULL, a->nprocs = a->capprocs = 0;
}

static void agg_clear(struct agg *a)
{
	clear_counts(a);
	aggdict_unref(a->d);
	aggnat_free(a->nat);
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
	a->last = -1;
	a->epoch = unique_next();
}

/*
 * The agent's window aggregate lives a second: interning the same frames'
 * names and files again each second was a tenth of its CPU. What a window
 * counted goes; the strings and locations stay, ids and all, until there
 * are AGG_KEEP_LOCS of them (a process whose code keeps changing) or a
 * native location's mapping is held (those go with the locations).
 */
void agg_reset_stacks(struct agg *a)
{
	if (a->nat || a->nlocs > AGG_KEEP_LOCS)
		agg_reset(a);
	else
		clear_counts(a);
}

/*
 * The counts move over, pointers and all; the locations are shared. With
 * native locations, whose mappings go with the counts, a starts anew.
 */
struct agg *agg_take(struct agg *a)
{
	struct agg *t = malloc(sizeof(*t));
	uint32_t *scratch = a->scratch, capscratch = a->capscratch;

	if (!t)
		return NULL;
	*t = *a;
	t->taken = true;
	t->d = a->d ? aggdict_ref(a->d) : NULL;
	t->scratch = NULL, t->capscratch = 0;
	t->last = -1;
	forget_counts(a);
	a->scratch = scratch, a->capscratch = capscratch;
	if (a->nat) {
		a->nat = NULL;
		agg_reset(a);
	}
	return t;
}

/* A taken aggregate's locations are its taker's: it adds none. */
int64_t agg_loc(struct agg *a, const char *name, const char *file, int line, uint32_t kind)
{
	int64_t id;

	if (a->taken)
		return -PBP_E_INVAL;
	if (!a->d && !(a->d = aggdict_new()))
		return -PBP_E_NOMEM;
	id = aggdict_loc(a->d, name, file, line, kind);
	a->nlocs = aggdict_count(a->d);
	return id;
}

struct aggnat *agg_nat(struct agg *a)
{
	if (!a->nat)
		a->nat = aggnat_new();
	return a->nat;
}

const struct aggnat *agg_nat_of(const struct agg *a)
{
	return a->nat;
}

static int64_t thread_identity(struct agg *a, uint32_t pid, uint32_t tid);
static struct aproc *tproc_get(struct agg *a, uint32_t pid);

/* locs with every thread label replaced by the fold's; locs itself when it has none. */
static const uint32_t *fold_labels(struct agg *a, const uint32_t *locs, uint32_t n)
{
	int64_t other = -1;

	for (uint32_t i = 0; i < n; i++) {
		if (locs[i] >= a->nlocs || loc_at(a, locs[i])->kind != LOC_THREAD)
			continue;
		if (other < 0) {
			if ((other = agg_loc(a, AGG_OTHER_LABEL, NULL, -1, LOC_THREAD)) < 0)
				return NULL;
			if (grow((void **)&a->scratch, &a->capscratch, sizeof(*a->scratch), n))
				return NULL;
			memcpy(a->scratch, locs, n * sizeof(*locs));
		}
		a->scratch[i] = (uint32_t)other;
	}
	return other < 0 ? locs : a->scratch;
}

int agg_add(struct agg *a, const struct stack_tags *tags, const uint32_t *locs, uint32_t n,
	    uint64_t count)
{
	struct stack_tags t = *tags;
	int64_t who = thread_identity(a, t.pid, t.tid);
	uint64_t h;
	uint32_t slot;
	struct stack *s;

	bool folded = who != t.tid;

	a->last = -1;
	if (who < 0)
		return (int)who;
	if (folded) {
		struct aproc *p = tproc_get(a, t.pid);

		t.tid = (uint32_t)who;
		if (!p || !(locs = fold_labels(a, locs, n)))
			return -PBP_E_NOMEM;
		p->folded += count;
	}
	tags = &t;
	h = hash_bytes(locs, (size_t)n * sizeof(*locs), hash_bytes(tags, sizeof(*tags), HASH_SEED ^ n));
	if (idtable_fit(&a->stacktab, &a->stacktab_cap, a->nstacks, stack_hash_of, a))
		return -PBP_E_NOMEM;
	for (slot = h & (a->stacktab_cap - 1); a->stacktab[slot]; slot = (slot + 1) & (a->stacktab_cap - 1)) {
		s = &a->stacks[a->stacktab[slot] - 1];
		if (s->hash == h && s->n == n && memcmp(&s->tags, tags, sizeof(*tags)) == 0 &&
		    memcmp(a->pool + s->off, locs, n * sizeof(*locs)) == 0) {
			s->count += count;
			a->total += count;
			a->last = folded ? -1 : (int64_t)a->stacktab[slot] - 1;
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
	a->last = folded ? -1 : (int64_t)a->nstacks - 1;
	return 0;
}

int64_t agg_last(const struct agg *a)
{
	return a->last;
}

void agg_bump(struct agg *a, uint32_t id, uint64_t count)
{
	if (id < a->nstacks) {
		a->stacks[id].count += count;
		a->total += count;
	}
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

/* The LOC_PROCESS root every rooted stack has, -1 when none has one, -2 when they differ. */
static int64_t common_root(const struct agg *a)
{
	int64_t root = -1;

	for (uint32_t i = 0; i < a->nstacks; i++) {
		const struct stack *s = &a->stacks[i];
		uint32_t first = s->n ? a->pool[s->off] : 0;

		if (!s->n || loc_at(a, first)->kind != LOC_PROCESS)
			continue;
		if (root >= 0 && root != (int64_t)first)
			return -2;
		root = first;
	}
	return root;
}

bool agg_drop_single_root(struct agg *a)
{
	int64_t root = common_root(a);

	if (root < 0)
		return false;
	for (uint32_t i = 0; i < a->nstacks; i++) {
		struct stack *s = &a->stacks[i];

		if (s->n && a->pool[s->off] == (uint32_t)root) {
			s->off++;
			s->n--;
		}
	}
	a->last = -1;
	return true;
}

void agg_loc_info(const struct agg *a, uint32_t id, const char **name, const char **file, int *line,
		  uint32_t *kind)
{
	const struct dict_loc *l = loc_at(a, id);

	*name = l->name;
	*file = l->file;
	*line = l->line;
	*kind = l->kind;
}

/* ------------------------------------------------------------ threads */

static uint64_t thread_key(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

static uint32_t thread_home(const struct agg *a, uint64_t key)
{
	return (uint32_t)hash_bytes(&key, sizeof(key), HASH_SEED) & (a->capthreads - 1);
}

/* The slot holding key, or the empty one where it would go. capthreads > 0. */
static uint32_t thread_slot(const struct agg *a, uint64_t key)
{
	uint32_t s = thread_home(a, key);

	while (a->threads[s].used && a->threads[s].key != key)
		s = (s + 1) & (a->capthreads - 1);
	return s;
}

static struct athread *thread_find(const struct agg *a, uint64_t key)
{
	uint32_t s;

	if (!a->capthreads)
		return NULL;
	s = thread_slot(a, key);
	return a->threads[s].used ? &a->threads[s] : NULL;
}

/* A new entry for key (not in the table yet), zeroed but for the key; NULL when out of memory. */
static struct athread *thread_insert(struct agg *a, uint64_t key)
{
	uint32_t s;

	if ((uint64_t)(a->nthreads + 1) * 10 >= (uint64_t)a->capthreads * 7) {
		struct athread *old = a->threads;
		uint32_t oldcap = a->capthreads;

		a->capthreads = oldcap ? oldcap * 2 : 64;
		a->threads = calloc(a->capthreads, sizeof(*a->threads));
		if (!a->threads) {
			a->threads = old, a->capthreads = oldcap;
			return NULL;
		}
		for (uint32_t i = 0; i < oldcap; i++)
			if (old[i].used)
				a->threads[thread_slot(a, old[i].key)] = old[i];
		free(old);
	}
	s = thread_slot(a, key);
	a->nthreads++;
	a->threads[s] = (struct athread){ .key = key, .used = true };
	return &a->threads[s];
}

/*
 * Forget the entry at slot s. Linear probing finds an entry by scanning from
 * its home slot to the first empty one, so the hole is filled by moving back
 * each later entry of the run whose home is not between the hole and it.
 */
static void thread_delete(struct agg *a, uint32_t s)
{
	uint32_t mask = a->capthreads - 1;

	free(a->threads[s].name);
	for (uint32_t j = (s + 1) & mask; a->threads[j].used; j = (j + 1) & mask) {
		uint32_t home = thread_home(a, a->threads[j].key);

		if (((j - home) & mask) >= ((j - s) & mask)) {
			a->threads[s] = a->threads[j];
			s = j;
		}
	}
	a->threads[s] = (struct athread){ 0 };
	a->nthreads--;
}

static struct aproc *tproc_get(struct agg *a, uint32_t pid)
{
	if (a->last_tproc < a->ntprocs && a->tprocs[a->last_tproc].pid == pid)
		return &a->tprocs[a->last_tproc];
	for (uint32_t i = 0; i < a->ntprocs; i++)
		if (a->tprocs[i].pid == pid) {
			a->last_tproc = i;
			return &a->tprocs[i];
		}
	if (grow((void **)&a->tprocs, &a->captprocs, sizeof(*a->tprocs), a->ntprocs + 1))
		return NULL;
	a->tprocs[a->ntprocs] = (struct aproc){ .pid = pid };
	a->last_tproc = a->ntprocs;
	return &a->tprocs[a->ntprocs++];
}

static const struct aproc *tproc_find(const struct agg *a, uint32_t pid)
{
	for (uint32_t i = 0; i < a->ntprocs; i++)
		if (a->tprocs[i].pid == pid)
			return &a->tprocs[i];
	return NULL;
}

static int queue_push(struct aproc *p, uint32_t tid)
{
	if (p->qhead + p->qlen == p->qcap) {
		if (p->qhead) {
			memmove(p->q, p->q + p->qhead, p->qlen * sizeof(*p->q));
			p->qhead = 0;
		} else if (grow((void **)&p->q, &p->qcap, sizeof(*p->q), p->qlen + 1)) {
			return -PBP_E_NOMEM;
		}
	}
	p->q[p->qhead + p->qlen++] = tid;
	return 0;
}

/* Forget the oldest names of threads never sampled until AGG_MAX_NAMED are left. */
static void forget_names(struct agg *a, struct aproc *p)
{
	while (p->named > AGG_MAX_NAMED && p->qlen) {
		uint64_t key = thread_key(p->pid, p->q[p->qhead]);
		struct athread *t = thread_find(a, key);

		p->qhead++, p->qlen--;
		if (t && !t->kept) {
			thread_delete(a, (uint32_t)(t - a->threads));
			p->named--;
		}
	}
}

/*
 * The tid a sample of (pid, tid) is counted under: its own while the process
 * has room for it (or had when it was first sampled), else AGG_OTHER_TID.
 */
static int64_t thread_identity(struct agg *a, uint32_t pid, uint32_t tid)
{
	uint64_t key = thread_key(pid, tid);
	struct athread *t = thread_find(a, key);
	struct aproc *p;

	if (tid == AGG_OTHER_TID || (t && t->kept))
		return tid;
	if (!(p = tproc_get(a, pid)))
		return -PBP_E_NOMEM;
	if (p->kept < AGG_MAX_THREADS) {
		if (t)
			p->named--;     /* its queue entry is skipped when reached */
		else if (!(t = thread_insert(a, key)))
			return -PBP_E_NOMEM;
		t->kept = true;
		p->kept++;
		return tid;
	}
	/* The fold gets its name once; a name already set (convert reads it back) stays. */
	key = thread_key(pid, AGG_OTHER_TID);
	if (!thread_find(a, key)) {
		if (!(t = thread_insert(a, key)) || !(t->name = strdup(AGG_OTHER_NAME)))
			return -PBP_E_NOMEM;
		t->kept = true;
	}
	return AGG_OTHER_TID;
}

int agg_set_thread_name(struct agg *a, uint32_t pid, uint32_t tid, const char *name)
{
	uint64_t key = thread_key(pid, tid);
	struct athread *t = thread_find(a, key);
	char *copy = strdup(name);
	struct aproc *p;

	if (!copy)
		return -PBP_E_NOMEM;
	if (t) {
		free(t->name);
		t->name = copy;
		return 0;
	}
	if (!(p = tproc_get(a, pid)) || !(t = thread_insert(a, key))) {
		free(copy);
		return -PBP_E_NOMEM;
	}
	t->name = copy;
	if (tid == AGG_OTHER_TID) {
		t->kept = true;
		return 0;
	}
	if (queue_push(p, tid)) {
		thread_delete(a, (uint32_t)(t - a->threads));
		return -PBP_E_NOMEM;
	}
	p->named++;
	forget_names(a, p);
	return 0;
}

const char *agg_thread_name(const struct agg *a, uint32_t pid, uint32_t tid)
{
	const struct athread *t = thread_find(a, thread_key(pid, tid));

	return t ? t->name : NULL;
}

int64_t agg_thread_loc(struct agg *a, uint32_t pid, uint32_t tid, uint32_t ns_tid, const char *name)
{
	int64_t who = thread_identity(a, pid, tid);
	char label[128];

	if (who < 0)
		return who;
	if (who != tid || tid == AGG_OTHER_TID)
		return agg_loc(a, AGG_OTHER_LABEL, NULL, -1, LOC_THREAD);
	root_label(label, sizeof(label), "thread", tid, ns_tid, name && name[0] ? name : "?");
	return agg_loc(a, label, NULL, -1, LOC_THREAD);
}

uint64_t agg_folded(const struct agg *a, uint32_t pid)
{
	const struct aproc *p = tproc_find(a, pid);

	return p ? p->folded : 0;
}

void agg_print_folds(const struct agg *a, FILE *o)
{
	for (uint32_t i = 0; i < a->ntprocs; i++)
		if (a->tprocs[i].folded)
			fprintf(o, "pybpfprof: pid %u had more than %d threads: %llu samples of the later "
				"ones are counted as one thread, \"%s\"\n", a->tprocs[i].pid,
				AGG_MAX_THREADS, (unsigned long long)a->tprocs[i].folded, AGG_OTHER_LABEL);
}

const char *const proc_label_key[PL__COUNT] = {
	[PL_PYTHON_VERSION] = "python_version",
	[PL_CONTAINER_ID] = "container_id",
	[PL_POD_UID] = "pod_uid",
	[PL_SERVICE] = "service_name",
	[PL_NAMESPACE] = "namespace",
	[PL_POD] = "pod",
	[PL_CONTAINER] = "container",
	[PL_NODE] = "node",
};

int agg_set_process(struct agg *a, const struct proc_meta *in)
{
	struct proc_meta m = { .pid = in->pid, .ns_pid = in->ns_pid };

	if (a->taken)
		return -PBP_E_INVAL;
	if (!a->d && !(a->d = aggdict_new()))
		return -PBP_E_NOMEM;
	for (int i = 0; i < PL__COUNT; i++) {
		m.label[i] = aggdict_str(a->d, in->label[i] ? in->label[i] : "");
		if (!m.label[i])
			return -PBP_E_NOMEM;
	}
	for (uint32_t i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == m.pid) {
			a->procs[i] = m;
			return 0;
		}
	if (grow((void **)&a->procs, &a->capprocs, sizeof(*a->procs), a->nprocs + 1))
		return -PBP_E_NOMEM;
	a->procs[a->nprocs++] = m;
	return 0;
}

struct proc_meta *proc_meta_dup(const struct proc_meta *m)
{
	size_t len[PL__COUNT], need = sizeof(*m);
	struct proc_meta *d;
	char *at;

	for (int i = 0; i < PL__COUNT; i++)
		need += (len[i] = m->label[i] ? strlen(m->label[i]) + 1 : 0);
	if (!(d = malloc(need)))
		return NULL;
	*d = (struct proc_meta){ .pid = m->pid, .ns_pid = m->ns_pid };
	at = (char *)(d + 1);
	for (int i = 0; i < PL__COUNT; i++)
		if (len[i]) {
			d->label[i] = memcpy(at, m->label[i], len[i]);
			at += len[i];
		}
	return d;
}

size_t agg_bytes(const struct agg *a)
{
	size_t n = sizeof(*a) + (a->d ? aggdict_bytes(a->d) : 0);

	n += (size_t)a->capstacks * sizeof(*a->stacks) + (size_t)a->stacktab_cap * sizeof(*a->stacktab);
	n += a->cappool * sizeof(*a->pool);
	n += (size_t)a->capthreads * sizeof(*a->threads) + (size_t)a->captprocs * sizeof(*a->tprocs);
	n += (size_t)a->capprocs * sizeof(*a->procs) + (size_t)a->capscratch * sizeof(*a->scratch);
	return n;
}

const struct proc_meta *agg_process(const struct agg *a, uint32_t pid)
{
	for (uint32_t i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	return NULL;
}

const struct proc_meta *agg_stack_process(const struct agg *a, uint32_t i, uint32_t *pid)
{
	*pid = a->stacks[i].tags.pid;
	return agg_process(a, *pid);
}
