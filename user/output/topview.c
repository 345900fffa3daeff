/* SPDX-License-Identifier: MIT */
/*
 * Per-function figures of a profile, and the end-of-run table built on them.
 *
 * A function is a (name, file) pair: the line varies from sample to sample
 * within one function, so it is left out of the key. The figures follow the
 * usual sampling-profiler conventions:
 *   own    samples whose innermost Python frame is the function;
 *   total  samples with the function anywhere on the stack, counted once per
 *          sample however often recursion puts it there (so total <= samples);
 *   frames every appearance, recursive ones included.
 * Label frames (thread, process, status) belong to no function.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "output/topview.h"
#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "core/text.h"
#include "output/writers.h"

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;   /* separates "ab"+"c" from "a"+"bc" */
}

/* Index of the function (name, file) in t, added if new; FUNC_NONE on ENOMEM. */
static uint32_t func_index(struct functab *t, uint32_t *slots, uint32_t mask, const char *name,
			   const char *file)
{
	uint32_t s = (uint32_t)str_hash(file, str_hash(name, 0xcbf29ce484222325ull)) & mask;

	for (; slots[s]; s = (s + 1) & mask) {
		const struct func_stat *f = &t->f[slots[s] - 1];

		if (strcmp(f->name, name) == 0 && strcmp(f->file, file) == 0)
			return slots[s] - 1;
	}
	t->f[t->n] = (struct func_stat){ .name = name, .file = file, .min_line = -1 };
	slots[s] = ++t->n;
	return t->n - 1;
}

/* Map every Python location to its function; labels map to FUNC_NONE. */
static int map_locations(const struct agg *a, struct functab *t)
{
	uint32_t nlocs = agg_nlocs(a), cap = 16;
	uint32_t *slots;

	while (cap < 2 * nlocs)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	t->f = calloc(nlocs ? nlocs : 1, sizeof(*t->f));
	t->of_loc = calloc(nlocs ? nlocs : 1, sizeof(*t->of_loc));
	if (!slots || !t->f || !t->of_loc) {
		free(slots);
		return -PBP_E_NOMEM;
	}
	for (uint32_t id = 0; id < nlocs; id++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(a, id, &name, &file, &line, &kind);
		t->of_loc[id] = kind == LOC_PY ? func_index(t, slots, cap - 1, name, file) : FUNC_NONE;
		if (t->of_loc[id] != FUNC_NONE && line >= 0) {
			struct func_stat *f = &t->f[t->of_loc[id]];

			if (f->min_line < 0 || line < f->min_line)
				f->min_line = line;
		}
	}
	free(slots);
	return 0;
}

/* seen[f] == i + 1 once function f was counted for stack i: totals count a sample once. */
static void count_stack(const struct agg *a, struct functab *t, uint32_t i, uint32_t *seen,
			functab_keep_fn keep, void *ctx)
{
	uint32_t n, last = FUNC_NONE;
	uint64_t count;
	const struct stack_tags *tags;
	const uint32_t *locs = agg_stack(a, i, &n, &count, &tags);

	if (keep && !keep(tags, ctx))
		return;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t f = t->of_loc[locs[j]];

		if (f == FUNC_NONE)
			continue;
		t->f[f].frames += count;
		if (seen[f] != i + 1) {
			seen[f] = i + 1;
			t->f[f].total += count;
		}
		last = f;
	}
	if (last != FUNC_NONE)
		t->f[last].own += count;
}

int functab_build(const struct agg *a, struct functab *t)
{
	return functab_build_where(a, t, NULL, NULL);
}

int functab_build_where(const struct agg *a, struct functab *t, functab_keep_fn keep, void *ctx)
{
	uint32_t *seen;

	memset(t, 0, sizeof(*t));
	if (map_locations(a, t) != 0)
		goto nomem;
	seen = calloc(t->n ? t->n : 1, sizeof(*seen));
	if (!seen)
		goto nomem;
	for (uint32_t i = 0; i < agg_nstacks(a); i++)
		count_stack(a, t, i, seen, keep, ctx);
	free(seen);
	return 0;
nomem:
	functab_free(t);
	return -PBP_E_NOMEM;
}

void functab_free(struct functab *t)
{
	free(t->f);
	free(t->of_loc);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------- the table */

static const struct functab *sort_tab;  /* qsort has no context argument in C11 */

/* Biggest own share first, then biggest total, then by name for a stable order. */
static int by_own_then_total(const void *pa, const void *pb)
{
	const struct func_stat *x = &sort_tab->f[*(const uint32_t *)pa];
	const struct func_stat *y = &sort_tab->f[*(const uint32_t *)pb];
	int c;

	if (x->own != y->own)
		return x->own > y->own ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->file, y->file);
}

static void print_secs(FILE *o, uint64_t samples, unsigned hz)
{
	if (hz)
		fprintf(o, "  %9.2fs", (double)samples / hz);
	else
		fprintf(o, "  %10s", "-");
}

static void print_row(FILE *o, const struct func_stat *f, uint64_t all, unsigned hz)
{
	fprintf(o, "%6.2f%%  %6.2f%%", 100.0 * (double)f->own / (double)all,
		100.0 * (double)f->total / (double)all);
	print_secs(o, f->own, hz);
	print_secs(o, f->total, hz);
	fputs("   ", o);
	text_put(o, f->name, TEXT_PLAIN);
	fputs(" (", o);
	text_put(o, f->file[0] ? f->file : "?", TEXT_PLAIN);
	fputs(")\n", o);
}

void top_print(const struct agg *a, const struct profile_meta *m, FILE *o, int rows)
{
	uint64_t all = agg_total(a);
	unsigned hz = m ? m->hz : 0;
	struct functab t;
	uint32_t *order;

	if (rows <= 0)
		rows = 10;
	agg_print_folds(a, o);
	fprintf(o, "\n%llu samples (%s, %u Hz)\n", (unsigned long long)all, m && m->mode ? m->mode : "cpu", hz);
	if (!all)
		return;
	if (functab_build(a, &t) != 0 || !(order = malloc((t.n ? t.n : 1) * sizeof(*order)))) {
		functab_free(&t);
		fprintf(o, "(out of memory for the summary)\n");
		return;
	}
	for (uint32_t i = 0; i < t.n; i++)
		order[i] = i;
	sort_tab = &t;
	qsort(order, t.n, sizeof(*order), by_own_then_total);
	sort_tab = NULL;
	fprintf(o, "  %%Own   %%Total     OwnTime   TotalTime   Function (file)\n");
	for (uint32_t i = 0; i < t.n && i < (uint32_t)rows; i++)
		print_row(o, &t.f[order[i]], all, hz);
	free(order);
	functab_free(&t);
}
