/* SPDX-License-Identifier: MIT */
/*
 * Locations live in segments that double in size (256, 512, 1024, ...
 * entries), allocated as needed and never moved: an id's entry stays where
 * it was made for as long as the dictionary lives, which is what lets the
 * agent hand each second's aggregate to its history without a copy. The
 * hash tables that find an entry by value are the adding side's alone.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "aggregate/aggdict.h"
#include "core/errors.h"

#define SEG0 256u
#define NSEGS 24        /* 256 x (2^24 - 1) ids: more than a uint32_t counts */
#define SEED 0xcbf29ce484222325ull

struct aggdict {
	atomic_uint refs;
	/* strings: own copies; a table of indexes + 1 (0: empty), open addressing */
	char **strs;
	uint32_t nstrs, capstrs;
	uint32_t *strtab, strtab_cap;
	/* locations */
	struct dict_loc *seg[NSEGS];
	uint32_t nlocs;
	uint32_t *loctab, loctab_cap;
	size_t bytes;
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t str_hash(const char *s)
{
	return fnv(s, strlen(s), SEED);
}

/* Interned strings are told apart by their addresses. */
static uint64_t loc_hash(const struct dict_loc *l)
{
	uint64_t h = fnv(&l->name, sizeof(l->name), SEED);

	h = fnv(&l->file, sizeof(l->file), h);
	h = fnv(&l->line, sizeof(l->line), h);
	return fnv(&l->kind, sizeof(l->kind), h);
}

struct aggdict *aggdict_new(void)
{
	struct aggdict *d = calloc(1, sizeof(*d));

	if (d) {
		atomic_init(&d->refs, 1);
		d->bytes = sizeof(*d);
	}
	return d;
}

struct aggdict *aggdict_ref(struct aggdict *d)
{
	atomic_fetch_add(&d->refs, 1);
	return d;
}

void aggdict_unref(struct aggdict *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	for (uint32_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
	free(d->strs);
	free(d->strtab);
	for (int k = 0; k < NSEGS; k++)
		free(d->seg[k]);
	free(d->loctab);
	free(d);
}

/* Segment k and the place in it of id. */
static uint32_t seg_of(uint32_t id, uint32_t *off)
{
	uint32_t x = id / SEG0 + 1, k = 31u - (uint32_t)__builtin_clz(x);

	*off = id - SEG0 * ((1u << k) - 1);
	return k;
}

const struct dict_loc *aggdict_at(const struct aggdict *d, uint32_t id)
{
	uint32_t off, k = seg_of(id, &off);

	return &d->seg[k][off];
}

uint32_t aggdict_count(const struct aggdict *d)
{
	return d->nlocs;
}

size_t aggdict_bytes(const struct aggdict *d)
{
	return d->bytes;
}

int idtable_fit(uint32_t **tab, uint32_t *cap, uint32_t n,
		uint64_t (*hash)(const void *ctx, uint32_t i), const void *ctx)
{
	uint32_t ncap = *cap ? *cap * 2 : 256, *t;

	if ((uint64_t)(n + 1) * 10 < (uint64_t)*cap * 7)
		return 0;
	t = calloc(ncap, sizeof(*t));
	if (!t)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = (uint32_t)hash(ctx, i) & (ncap - 1);

		while (t[s])
			s = (s + 1) & (ncap - 1);
		t[s] = i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = ncap;
	return 0;
}

/* idtable_fit, its growth counted in the dictionary's bytes. */
static int table_fit(struct aggdict *d, uint32_t **tab, uint32_t *cap, uint32_t n,
		     uint64_t (*hash)(const void *ctx, uint32_t i))
{
	uint32_t was = *cap;
	int err = idtable_fit(tab, cap, n, hash, d);

	d->bytes += (size_t)(*cap - was) * sizeof(**tab);
	return err;
}

static uint64_t str_hash_at(const void *ctx, uint32_t i)
{
	const struct aggdict *d = ctx;

	return str_hash(d->strs[i]);
}

static uint64_t loc_hash_at(const void *ctx, uint32_t i)
{
	return loc_hash(aggdict_at(ctx, i));
}

static const char *intern(struct aggdict *d, const char *s)
{
	uint64_t h = str_hash(s);
	uint32_t slot;
	char *copy, **p;

	if (table_fit(d, &d->strtab, &d->strtab_cap, d->nstrs, str_hash_at))
		return NULL;
	for (slot = h & (d->strtab_cap - 1); d->strtab[slot]; slot = (slot + 1) & (d->strtab_cap - 1))
		if (strcmp(d->strs[d->strtab[slot] - 1], s) == 0)
			return d->strs[d->strtab[slot] - 1];
	if (d->nstrs == d->capstrs) {
		p = realloc(d->strs, (d->capstrs ? d->capstrs * 2 : 64) * sizeof(*p));
		if (!p)
			return NULL;
		d->bytes += (d->capstrs ? d->capstrs : 64) * sizeof(*p);
		d->strs = p;
		d->capstrs = d->capstrs ? d->capstrs * 2 : 64;
	}
	copy = strdup(s);
	if (!copy)
		return NULL;
	d->bytes += strlen(s) + 1 + 16;         /* malloc's own overhead, about */
	d->strs[d->nstrs++] = copy;
	d->strtab[slot] = d->nstrs;
	return copy;
}

const char *aggdict_str(struct aggdict *d, const char *s)
{
	return intern(d, s);
}

int64_t aggdict_loc(struct aggdict *d, const char *name, const char *file, int line, uint32_t kind)
{
	struct dict_loc l = { intern(d, name), intern(d, file ? file : ""), line, kind };
	uint32_t slot, off, k;

	if (!l.name || !l.file || table_fit(d, &d->loctab, &d->loctab_cap, d->nlocs, loc_hash_at))
		return -PBP_E_NOMEM;
	for (slot = loc_hash(&l) & (d->loctab_cap - 1); d->loctab[slot]; slot = (slot + 1) & (d->loctab_cap - 1)) {
		const struct dict_loc *o = aggdict_at(d, d->loctab[slot] - 1);

		if (o->name == l.name && o->file == l.file && o->line == line && o->kind == kind)
			return d->loctab[slot] - 1;
	}
	k = seg_of(d->nlocs, &off);
	if (k >= NSEGS)
		return -PBP_E_NOMEM;
	if (!d->seg[k]) {
		d->seg[k] = malloc(((size_t)SEG0 << k) * sizeof(l));
		if (!d->seg[k])
			return -PBP_E_NOMEM;
		d->bytes += ((size_t)SEG0 << k) * sizeof(l);
	}
	d->seg[k][off] = l;
	d->loctab[slot] = ++d->nlocs;
	return d->nlocs - 1;
}
