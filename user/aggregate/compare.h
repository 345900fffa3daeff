/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_COMPARE_H
#define PBP_AGGREGATE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agg;

/*
 * Two profiles of the same program side by side (`pybpfprof diff`). Their
 * stacks go into one aggregate, u, so that a stack both have is one stack
 * with one set of location ids; count[0][i] and count[1][i] are what stack
 * i of u had in the profile before and the one after (u's own count is
 * their sum). Comparisons are of shares, each side divided by its own total,
 * so a longer or faster second run does not read as growth.
 */
enum { DIFF_BEFORE, DIFF_AFTER };

struct agg_diff {
	struct agg *u;
	uint64_t *count[2];
	uint64_t total[2];
	uint32_t cap;
};

/* 0, or -PBP_E_NOMEM (d is then empty; agg_diff_free is safe). */
int agg_diff_build(struct agg_diff *d, const struct agg *before, const struct agg *after);
void agg_diff_free(struct agg_diff *d);
/* c samples of the before profile in the after profile's units: c * total after / total before. */
double agg_diff_scaled(const struct agg_diff *d, uint64_t c);

#endif /* PBP_AGGREGATE_COMPARE_H */
