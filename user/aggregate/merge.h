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

#endif /* PBP_AGGREGATE_MERGE_H */
