/* SPDX-License-Identifier: MIT */
/*
 * Two profiles in one aggregate with a count per side; see diff.h. Location
 * ids differ between the two aggregates, so each side's are looked up in
 * the union once (as merge.c does) and a stack the two share lands on the
 * same stack of the union, whose index agg_last gives.
 */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "aggregate/compare.h"
#include "aggregate/aggregate.h"
#include "aggregate/merge.h"
#include "core/errors.h"
#include "core/limits.h"

/* Room for stack index i in both count arrays. */
static int reserve(struct agg_diff *d, uint32_t i)
{
	uint32_t ncap = d->cap ? d->cap : 256;

	if (i < d->cap)
		return 0;
	while (ncap <= i)
		ncap *= 2;
	for (int s = 0; s < 2; s++) {
		uint64_t *c = realloc(d->count[s], ncap * sizeof(*c));

		if (!c)
			return -PBP_E_NOMEM;
		memset(c + d->cap, 0, (ncap - d->cap) * sizeof(*c));
		d->count[s] = c;
	}
	d->cap = ncap;
	return 0;
}

static int add_stack(struct agg_diff *d, int side, const struct agg *src, uint32_t i, struct agg_copier *c)
{
	uint64_t count;
	uint32_t n;
	int err;

	agg_stack(src, i, &n, &count, NULL);
	if ((err = agg_copy_stack(d->u, src, i, c)) != 0)
		return err;
	/* folded into "[other threads]": more threads of one process than the union keeps */
	if (agg_last(d->u) < 0)
		return -PBP_E_LIMIT;
	if ((err = reserve(d, (uint32_t)agg_last(d->u))) != 0)
		return err;
	d->count[side][agg_last(d->u)] += count;
	d->total[side] += count;
	return 0;
}

static int add_side(struct agg_diff *d, int side, const struct agg *src)
{
	struct agg_copier c;
	int err = agg_copier_init(&c, src);

	for (uint32_t i = 0; !err && i < agg_nstacks(src); i++)
		err = add_stack(d, side, src, i, &c);
	agg_copier_free(&c);
	return err;
}

int agg_diff_build(struct agg_diff *d, const struct agg *before, const struct agg *after)
{
	int err;

	memset(d, 0, sizeof(*d));
	err = (d->u = agg_new()) ? reserve(d, 0) : -PBP_E_NOMEM;
	if (!err)
		err = add_side(d, DIFF_BEFORE, before);
	if (!err)
		err = add_side(d, DIFF_AFTER, after);
	if (err)
		agg_diff_free(d);
	return err;
}

void agg_diff_free(struct agg_diff *d)
{
	agg_free(d->u);
	free(d->count[0]);
	free(d->count[1]);
	memset(d, 0, sizeof(*d));
}

double agg_diff_scaled(const struct agg_diff *d, uint64_t c)
{
	return d->total[DIFF_BEFORE] ? (double)c * (double)d->total[DIFF_AFTER] / (double)d->total[DIFF_BEFORE] : 0;
}
