/* SPDX-License-Identifier: MIT */
/*
 * Which source files a profile's page embeds: every (process root, file) of
 * its Python frames, ranked by the samples of the stacks through it (a
 * stack counted once however many of its frames are in the file), read by
 * the caller's reader hottest first while they fit SRC_BUDGET. Runs once,
 * after the run: nothing of this is on the sampling path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "read/sources.h"
#include "aggregate/aggregate.h"
#include "core/errors.h"

/* (root, file) -> index into the files being ranked; open addressing. */
struct rank {
	struct src_file *f;
	uint32_t *stamp;        /* the last stack counted into each file, + 1 */
	uint32_t n, cap;
	uint32_t *slot;         /* file index + 1, 0 empty */
	uint32_t nslot;         /* a power of two */
};

static int cmp_pid(const void *x, const void *y)
{
	uint32_t a = ((const struct src_pid *)x)->pid, b = ((const struct src_pid *)y)->pid;

	return (a > b) - (a < b);
}

/* Every process of the stacks, once, with its root. */
static int collect_pids(const struct agg *a, const struct src_reader *rd, struct sources *s)
{
	uint32_t ns = agg_nstacks(a), k = 0, n;
	const struct stack_tags *t;
	uint64_t c;

	s->pids = calloc(ns + 1, sizeof(*s->pids));
	if (!s->pids)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < ns; i++) {
		agg_stack(a, i, &n, &c, &t);
		s->pids[i].pid = t->pid;
	}
	qsort(s->pids, ns, sizeof(*s->pids), cmp_pid);
	for (uint32_t i = 0; i < ns; i++)
		if (!k || s->pids[k - 1].pid != s->pids[i].pid)
			s->pids[k++] = s->pids[i];
	s->npids = k;
	for (uint32_t i = 0; i < k; i++)
		s->pids[i].root = rd->root_of(rd->ctx, s->pids[i].pid);
	return 0;
}

static uint32_t root_of_pid(const struct sources *s, uint32_t pid)
{
	struct src_pid key = { .pid = pid };
	const struct src_pid *hit = bsearch(&key, s->pids, s->npids, sizeof(*s->pids), cmp_pid);

	return hit ? hit->root : SRC_NO_ROOT;
}

static uint32_t slot_hash(uint32_t root, const char *path, uint32_t mask)
{
	uint64_t h = ((uint64_t)(uintptr_t)path ^ ((uint64_t)root << 32)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & mask;
}

static int rank_grow(struct rank *r)
{
	uint32_t cap = r->cap ? 2 * r->cap : 64, nslot = 2 * cap;
	struct src_file *f = realloc(r->f, cap * sizeof(*f));
	uint32_t *stamp = f ? realloc(r->stamp, cap * sizeof(*stamp)) : NULL;
	uint32_t *slot = stamp ? calloc(nslot, sizeof(*slot)) : NULL;

	if (f)
		r->f = f;
	if (stamp)
		r->stamp = stamp;
	if (!slot)
		return -PBP_E_NOMEM;
	free(r->slot);
	r->slot = slot;
	r->nslot = nslot;
	r->cap = cap;
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t h = slot_hash(r->f[i].root, r->f[i].path, nslot - 1);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = i + 1;
	}
	return 0;
}

/* The file's index, added when new; -1 when out of memory. */
static int64_t rank_file(struct rank *r, uint32_t root, const char *path)
{
	uint32_t h;

	if (r->n >= r->cap && rank_grow(r))
		return -1;
	for (h = slot_hash(root, path, r->nslot - 1); r->slot[h]; h = (h + 1) & (r->nslot - 1)) {
		struct src_file *f = &r->f[r->slot[h] - 1];

		if (f->root == root && f->path == path)
			return r->slot[h] - 1;
	}
	r->f[r->n] = (struct src_file){ .root = root, .path = path };
	r->stamp[r->n] = 0;
	r->slot[h] = r->n + 1;
	return r->n++;
}

static int count_stack(const struct agg *a, const struct sources *s, struct rank *r, uint32_t i)
{
	const struct stack_tags *t;
	uint32_t n;
	uint64_t count;
	const uint32_t *fr = agg_stack(a, i, &n, &count, &t);
	uint32_t root = root_of_pid(s, t->pid);

	for (uint32_t k = 0; k < n; k++) {
		const char *name, *file;
		uint32_t kind;
		int line;
		int64_t fi;

		agg_loc_info(a, fr[k], &name, &file, &line, &kind);
		if (kind != LOC_PY || !file || !file[0])
			continue;
		if ((fi = rank_file(r, root, file)) < 0)
			return -PBP_E_NOMEM;
		if (r->stamp[fi] != i + 1) {    /* each stack once a file */
			r->stamp[fi] = i + 1;
			r->f[fi].samples += count;
		}
	}
	return 0;
}

static int cmp_hot(const void *x, const void *y)
{
	const struct src_file *a = x, *b = y;

	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	if (a->root != b->root)
		return a->root < b->root ? -1 : 1;
	return strcmp(a->path, b->path);
}

/* Hottest first, each read while the budget lasts; the rest say why not. */
static int read_files(const struct src_reader *rd, struct sources *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		struct src_file *f = &s->f[i];
		size_t left = SRC_BUDGET - s->embedded, max = left < SRC_FILE_MAX ? left : SRC_FILE_MAX;
		size_t size = 0;
		int err;

		if (!SRC_IS_ROOT(f->root)) {
			snprintf(f->why, sizeof(f->why), "%s", f->root == SRC_NO_ROOT
				 ? "the process had exited before its files could be opened"
				 : f->root == SRC_ROOTS_FULL ? "too many processes' roots were held already"
				 : "not allowed to open the process's root");
			continue;
		}
		if (!left) {
			snprintf(f->why, sizeof(f->why), "left out: the %u MiB for sources went to files with more "
				 "samples", SRC_BUDGET >> 20);
			continue;
		}
		err = rd->read(rd->ctx, f->root, f->path, max, &f->text, &f->len, &size, f->why, sizeof(f->why));
		if (err == -PBP_E_NOMEM)
			return err;
		if (err == -PBP_E_LIMIT && size > SRC_FILE_MAX)
			snprintf(f->why, sizeof(f->why), "left out: %zu KiB, over the %u KiB a file may take",
				 (size + 1023) >> 10, SRC_FILE_MAX >> 10);
		else if (err == -PBP_E_LIMIT)
			snprintf(f->why, sizeof(f->why), "left out: %zu KiB, more than the %zu KiB left of the "
				 "%u MiB for sources, which went to files with more samples", (size + 1023) >> 10,
				 left >> 10, SRC_BUDGET >> 20);
		else if (!err)
			s->embedded += f->len;
	}
	return 0;
}

int sources_collect(const struct agg *a, const struct src_reader *rd, struct sources *s)
{
	struct rank r = { 0 };
	int err = collect_pids(a, rd, s);

	for (uint32_t i = 0; !err && i < agg_nstacks(a); i++)
		err = count_stack(a, s, &r, i);
	free(r.slot);
	free(r.stamp);
	s->f = r.f;
	s->n = r.n;
	if (err)
		return err;
	qsort(s->f, s->n, sizeof(*s->f), cmp_hot);
	if (s->n > SRC_MAX_FILES)
		s->n = SRC_MAX_FILES;
	return read_files(rd, s);
}

void sources_free(struct sources *s)
{
	for (uint32_t i = 0; s->f && i < s->n; i++)
		free(s->f[i].text);
	free(s->f);
	free(s->pids);
	memset(s, 0, sizeof(*s));
}
