/* SPDX-License-Identifier: MIT */
/*
 * Two profiles as one collapsed file with two counts a line, the input of
 * flamegraph.pl's differential mode (what its difffolded.pl writes): each
 * side is first collapsed to its lines (collapsed_lines), so the stacks
 * compared are exactly the lines collapsed_write would print, then the two
 * sets of lines are put side by side by agg_diff.
 */
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/compare.h"
#include "core/errors.h"
#include "output/writers.h"

/* A scaled count: whole when it is one, else two decimals (flamegraph.pl reads both). */
static void put_count(FILE *o, double v)
{
	double whole = (double)(uint64_t)(v + 0.5);     /* v >= 0; no libm for round() */

	if (v - whole < 1e-9 && whole - v < 1e-9)
		fprintf(o, " %.0f", whole);
	else
		fprintf(o, " %.2f", v);
}

static void write_lines(const struct agg_diff *d, FILE *o)
{
	for (uint32_t i = 0; i < agg_nstacks(d->u); i++) {
		uint64_t count;
		uint32_t n;
		const uint32_t *locs = agg_stack(d->u, i, &n, &count, NULL);

		for (uint32_t j = 0; j < n; j++) {
			const char *name, *file;
			uint32_t kind;
			int line;

			agg_loc_info(d->u, locs[j], &name, &file, &line, &kind);
			if (j)
				fputc(';', o);
			fputs(name, o);
		}
		put_count(o, agg_diff_scaled(d, d->count[DIFF_BEFORE][i]));
		fprintf(o, " %llu\n", (unsigned long long)d->count[DIFF_AFTER][i]);
	}
}

int diff_collapsed_write(const struct agg *before, const struct agg *after, FILE *o)
{
	struct agg *lines[2] = { agg_new(), agg_new() };
	struct agg_diff d = { 0 };
	int err = lines[0] && lines[1] ? 0 : -PBP_E_NOMEM;

	if (!err)
		err = collapsed_lines(before, lines[0]);
	if (!err)
		err = collapsed_lines(after, lines[1]);
	if (!err)
		err = agg_diff_build(&d, lines[0], lines[1]);
	if (!err)
		write_lines(&d, o);
	agg_diff_free(&d);
	agg_free(lines[0]);
	agg_free(lines[1]);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
