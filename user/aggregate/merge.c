/* SPDX-License-Identifier: MIT */
/*
 * One aggregate into another: the node agent keeps a second of samples per
 * aggregate and answers "the last N seconds" or "this service's window" by
 * merging them. Only the public interface is used: location ids differ
 * between aggregates, so each of src's is looked up once in dst.
 */
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>

#include "aggregate/merge.h"
#include "aggregate/aggnat.h"
#include "core/errors.h"
#include "core/limits.h"

/* A native location's mapping and address go along (pprof's, aggnat.h). */
static int64_t copy_native(struct agg *dst, const struct agg *src, uint32_t id, int64_t to)
{
	struct aggnat *n;
	uint32_t mapping;
	uint64_t addr;

	if (to < 0 || !aggnat_get(agg_nat_of(src), id, &mapping, &addr))
		return to;
	if (!(n = agg_nat(dst)) || aggnat_set(n, (uint32_t)to, aggnat_mapping(agg_nat_of(src), mapping), addr))
		return -PBP_E_NOMEM;
	return to;
}

/* dst's id of src's location id, found (and remembered in map) the first time. */
static int64_t map_loc(struct agg *dst, const struct agg *src, int64_t *map, uint32_t id)
{
	const char *name, *file;
	uint32_t kind;
	int line;

	if (map[id] < 0) {
		agg_loc_info(src, id, &name, &file, &line, &kind);
		map[id] = copy_native(dst, src, id, agg_loc(dst, name, file, line, kind));
	}
	return map[id];
}

/* Once per process: its labels go along. */
static int copy_process(struct agg *dst, const struct proc_meta *m)
{
	return m && !agg_process(dst, m->pid) ? agg_set_process(dst, m) : 0;
}

int agg_copier_init(struct agg_copier *c, const struct agg *src)
{
	uint32_t nlocs = agg_nlocs(src);

	c->map = malloc(((size_t)nlocs + 1) * sizeof(*c->map));
	c->locs = malloc(PBP_MAX_LOCS * sizeof(*c->locs));
	if (!c->map || !c->locs) {
		agg_copier_free(c);
		return -PBP_E_NOMEM;
	}
	for (uint32_t i = 0; i < nlocs; i++)
		c->map[i] = -1;
	return 0;
}

void agg_copier_free(struct agg_copier *c)
{
	free(c->map);
	free(c->locs);
	c->map = NULL;
	c->locs = NULL;
}

int agg_copy_stack(struct agg *dst, const struct agg *src, uint32_t i, struct agg_copier *c)
{
	int64_t *map = c->map;
	uint32_t *locs = c->locs;
	const struct stack_tags *tags;
	const char *name;
	uint64_t count;
	uint32_t n;
	const uint32_t *s = agg_stack(src, i, &n, &count, &tags);

	for (uint32_t j = 0; j < n && j < PBP_MAX_LOCS; j++) {
		int64_t id = map_loc(dst, src, map, s[j]);

		if (id < 0)
			return (int)id;
		locs[j] = (uint32_t)id;
	}
	name = agg_thread_name(src, tags->pid, tags->tid);
	if (name && !agg_thread_name(dst, tags->pid, tags->tid) &&
	    agg_set_thread_name(dst, tags->pid, tags->tid, name))
		return -PBP_E_NOMEM;
	return agg_add(dst, tags, locs, n < PBP_MAX_LOCS ? n : PBP_MAX_LOCS, count);
}

int agg_merge(struct agg *dst, const struct agg *src, agg_keep_fn keep, void *ctx)
{
	struct agg_copier c;
	int err = agg_copier_init(&c, src);

	for (uint32_t i = 0; !err && i < agg_nstacks(src); i++) {
		uint32_t pid;
		const struct proc_meta *m = agg_stack_process(src, i, &pid);

		if (keep && !keep(m, pid, ctx))
			continue;
		err = copy_process(dst, m);
		if (!err)
			err = agg_copy_stack(dst, src, i, &c);
	}
	agg_copier_free(&c);
	return err;
}
