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
#include "core/errors.h"
#include "core/limits.h"

/* dst's id of src's location id, found (and remembered in map) the first time. */
static int64_t map_loc(struct agg *dst, const struct agg *src, int64_t *map, uint32_t id)
{
	const char *name, *file;
	uint32_t kind;
	int line;

	if (map[id] < 0) {
		agg_loc_info(src, id, &name, &file, &line, &kind);
		map[id] = agg_loc(dst, name, file, line, kind);
	}
	return map[id];
}

/* Once per process: its labels go along. */
static int copy_process(struct agg *dst, const struct proc_meta *m)
{
	return m && !agg_process(dst, m->pid) ? agg_set_process(dst, m) : 0;
}

static int copy_stack(struct agg *dst, const struct agg *src, uint32_t i, int64_t *map, uint32_t *locs)
{
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
	uint32_t nlocs = agg_nlocs(src);
	int64_t *map = malloc(((size_t)nlocs + 1) * sizeof(*map));
	uint32_t *locs = malloc(PBP_MAX_LOCS * sizeof(*locs));
	int err = map && locs ? 0 : -PBP_E_NOMEM;

	for (uint32_t i = 0; !err && i < nlocs; i++)
		map[i] = -1;
	for (uint32_t i = 0; !err && i < agg_nstacks(src); i++) {
		const struct stack_tags *tags;
		const struct proc_meta *m;
		uint64_t count;
		uint32_t n;

		agg_stack(src, i, &n, &count, &tags);
		m = agg_process(src, tags->pid);
		if (keep && !keep(m, tags->pid, ctx))
			continue;
		err = copy_process(dst, m);
		if (!err)
			err = copy_stack(dst, src, i, map, locs);
	}
	free(map);
	free(locs);
	return err;
}
