/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_MERGE_H
#define PBP_AGGREGATE_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "aggregate/aggregate.h"

/* Keep src's stacks of this process (m NULL: not described) in a merge? */
typedef bool (*agg_keep_fn)(const struct proc_meta *m, uint32_t pid, void *ctx);

/*
 * Add src's stacks (those keep accepts; keep NULL: all) to dst, with their
 * locations, the processes they belong to and their threads' names. 0 or
 * -PBP_E_NOMEM (dst then holds part of src).
 */
int agg_merge(struct agg *dst, const struct agg *src, agg_keep_fn keep, void *ctx);

/* Copying stacks one by one (a merge's, a diff's): src's location ids as dst's, a stack buffer. */
struct agg_copier {
	int64_t *map;       /* src's location id -> dst's, -1 until looked up */
	uint32_t *locs;
};

int agg_copier_init(struct agg_copier *c, const struct agg *src);     /* -PBP_E_NOMEM */
void agg_copier_free(struct agg_copier *c);
/*
 * src's stack i added to dst (its locations, its thread's name; capped at
 * PBP_MAX_LOCS frames): 0 or -PBP_E_NOMEM. agg_last(dst) is the stack it
 * became, < 0 when dst folded it into "[other threads]".
 */
int agg_copy_stack(struct agg *dst, const struct agg *src, uint32_t i, struct agg_copier *c);

#endif /* PBP_AGGREGATE_MERGE_H */
