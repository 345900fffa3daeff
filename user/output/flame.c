/* SPDX-License-Identifier: MIT */
/* Tree order and escaping shared by the flame graph writers; see flame.h. */
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>

#include "output/flame.h"
#include "core/errors.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "output/writers.h"

static int cmp_text(const void *x, const void *y, void *ctx)
{
	char *const *text = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = strcmp(text[a], text[b]);

	return c ? c : (a > b) - (a < b);   /* equal texts: keep a total order */
}

struct stack_ctx {
	const struct agg *a;
	const uint32_t *rank;
};

static int cmp_u32(uint32_t a, uint32_t b)
{
	return (a > b) - (a < b);
}

static int cmp_stack(const void *x, const void *y, void *ctx)
{
	const struct stack_ctx *c = ctx;
	const struct stack_tags *t1, *t2;
	uint32_t n1, n2, i;
	uint64_t c1, c2;
	const uint32_t *s1 = agg_stack(c->a, *(const uint32_t *)x, &n1, &c1, &t1);
	const uint32_t *s2 = agg_stack(c->a, *(const uint32_t *)y, &n2, &c2, &t2);
	int r;

	for (i = 0; i < n1 && i < n2; i++)
		if ((r = cmp_u32(c->rank[s1[i]], c->rank[s2[i]])))
			return r;
	if ((r = cmp_u32(n1, n2)))
		return r;
	/* Same frames, other tags: any fixed order, so the output is reproducible. */
	if ((r = cmp_u32(t1->pid, t2->pid)) || (r = cmp_u32(t1->tid, t2->tid)))
		return r;
	return cmp_u32(t1->status, t2->status);
}

static int rank_locs(const struct agg *a, struct flame_order *fo)
{
	char buf[2048];

	for (uint32_t i = 0; i < fo->nlocs; i++) {
		loc_format(a, i, buf, sizeof(buf));
		if (!(fo->text[i] = strdup(buf)))
			return -PBP_E_NOMEM;
		fo->byrank[i] = i;
	}
	qsort_r(fo->byrank, fo->nlocs, sizeof(*fo->byrank), cmp_text, fo->text);
	for (uint32_t r = 0; r < fo->nlocs; r++)
		fo->rank[fo->byrank[r]] = r;
	return 0;
}

int flame_order_build(const struct agg *a, struct flame_order *fo)
{
	struct stack_ctx ctx = { a, NULL };
	uint32_t nl = agg_nlocs(a), ns = agg_nstacks(a);

	memset(fo, 0, sizeof(*fo));
	fo->text = calloc(nl + 1, sizeof(*fo->text));
	fo->rank = calloc(nl + 1, sizeof(*fo->rank));
	fo->byrank = calloc(nl + 1, sizeof(*fo->byrank));
	fo->stacks = calloc(ns + 1, sizeof(*fo->stacks));
	fo->nlocs = nl;
	fo->nstacks = ns;
	if (!fo->text || !fo->rank || !fo->byrank || !fo->stacks || rank_locs(a, fo)) {
		flame_order_free(fo);
		return -PBP_E_NOMEM;
	}
	for (uint32_t i = 0; i < ns; i++)
		fo->stacks[i] = i;
	ctx.rank = fo->rank;
	qsort_r(fo->stacks, ns, sizeof(*fo->stacks), cmp_stack, &ctx);
	return 0;
}

void flame_order_free(struct flame_order *fo)
{
	if (fo->text)
		for (uint32_t i = 0; i < fo->nlocs; i++)
			free(fo->text[i]);
	free(fo->text);
	free(fo->rank);
	free(fo->byrank);
	free(fo->stacks);
	memset(fo, 0, sizeof(*fo));
}

uint32_t flame_lcp(const struct agg *a, uint32_t s1, uint32_t s2)
{
	uint32_t n1, n2, i;
	uint64_t c;
	const uint32_t *f1 = agg_stack(a, s1, &n1, &c, NULL);
	const uint32_t *f2 = agg_stack(a, s2, &n2, &c, NULL);

	for (i = 0; i < n1 && i < n2 && f1[i] == f2[i]; i++)
		;
	return i;
}

uint32_t flame_status_of(const char *label)
{
	int s = status_by_label(label);

	return s >= 0 ? (uint32_t)s : ST_UNKNOWN;
}
