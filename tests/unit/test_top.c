/* SPDX-License-Identifier: MIT */
/* Per-function figures (functab) and the end-of-run table (top_print). */
#include <stdlib.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "output/topview.h"
#include "output/writers.h"
#include "unit.h"

/* main -> a -> b -> b -> b, main -> c, and a stack of labels only. */
static struct agg *sample_profile(void)
{
	struct agg *a = agg_new();
	struct stack_tags t = { .pid = 42, .tid = 100, .status = ST_RUNNING };
	uint32_t th = (uint32_t)agg_loc(a, "thread 100 MainThread", NULL, -1, LOC_THREAD);
	uint32_t run = (uint32_t)agg_loc(a, "[running]", NULL, -1, LOC_STATUS);
	uint32_t main10 = (uint32_t)agg_loc(a, "main", "app.py", 10, LOC_PY);
	uint32_t main11 = (uint32_t)agg_loc(a, "main", "app.py", 11, LOC_PY);
	uint32_t a3 = (uint32_t)agg_loc(a, "a", "app.py", 3, LOC_PY);
	uint32_t b7 = (uint32_t)agg_loc(a, "b", "app.py", 7, LOC_PY);
	uint32_t b8 = (uint32_t)agg_loc(a, "b", "app.py", 8, LOC_PY);
	uint32_t c20 = (uint32_t)agg_loc(a, "c", "lib.py", 20, LOC_PY);
	/* a "b" in another file is another function */
	uint32_t bo = (uint32_t)agg_loc(a, "b", "other.py", 1, LOC_PY);
	uint32_t s1[] = { th, main10, a3, b7, b8, b7, run };
	uint32_t s2[] = { th, main11, c20, run };
	uint32_t s3[] = { th, run };
	uint32_t s4[] = { th, main10, bo };

	agg_add(a, &t, s1, 7, 6);
	agg_add(a, &t, s2, 4, 3);
	agg_add(a, &t, s3, 2, 1);
	agg_add(a, &t, s4, 3, 2);
	return a;
}

static const struct func_stat *find(const struct functab *t, const char *name, const char *file)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (strcmp(t->f[i].name, name) == 0 && strcmp(t->f[i].file, file) == 0)
			return &t->f[i];
	return NULL;
}

static void test_functab(void)
{
	struct agg *a = sample_profile();
	struct functab t;
	const struct func_stat *f;

	CHECK_EQ_INT(functab_build(a, &t), 0);
	CHECK_EQ_INT(t.n, 5);       /* main, a, b, c, b (other.py) */
	f = find(&t, "main", "app.py");
	CHECK(f && f->own == 0 && f->total == 11 && f->frames == 11 && f->min_line == 10);
	f = find(&t, "b", "app.py");
	/* recursion: three frames per sample, the sample counted once */
	CHECK(f && f->own == 6 && f->total == 6 && f->frames == 18 && f->min_line == 7);
	f = find(&t, "c", "lib.py");
	CHECK(f && f->own == 3 && f->total == 3 && f->frames == 3);
	f = find(&t, "b", "other.py");
	CHECK(f && f->own == 2 && f->total == 2);
	CHECK_EQ_INT(t.of_loc[0], FUNC_NONE);   /* the thread label */
	CHECK_EQ_INT(t.of_loc[1], FUNC_NONE);   /* the status label */
	functab_free(&t);
	agg_free(a);
}

static char *top_text(const struct agg *a, unsigned hz, int rows)
{
	struct profile_meta m = { .mode = "cpu", .hz = hz };
	char *buf = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&buf, &len);

	top_print(a, &m, o, rows);
	fclose(o);
	return buf;
}

static void test_top_print(void)
{
	struct agg *a = sample_profile();
	char *out = top_text(a, 100, 0);
	char *b = strstr(out, "b (app.py)"), *c = strstr(out, "c (lib.py)");
	char *bo = strstr(out, "b (other.py)"), *mn = strstr(out, "main (app.py)");

	CHECK(strstr(out, "12 samples (cpu, 100 Hz)") != NULL);
	CHECK(strstr(out, "%Own") && strstr(out, "%Total") && strstr(out, "OwnTime") && strstr(out, "TotalTime"));
	/* order: own 6, 3, 2, then main (own 0, total 11) before a (own 0, total 6) */
	CHECK(b && c && bo && mn && b < c && c < bo && bo < mn);
	CHECK(mn && strstr(out, "a (app.py)") > mn);
	/* b: own 6 of 12 samples, total 6: 50% and 0.06 s each */
	CHECK(strstr(out, " 50.00%   50.00%       0.06s       0.06s   b (app.py)") != NULL);
	CHECK(strstr(out, "  0.00%   91.67%       0.00s       0.11s   main (app.py)") != NULL);
	free(out);

	out = top_text(a, 100, 2);      /* only the two first rows */
	CHECK(strstr(out, "c (lib.py)") && !strstr(out, "other.py"));
	free(out);

	out = top_text(a, 0, 10);       /* rate unknown: no times */
	CHECK(strstr(out, "-   b (app.py)") != NULL);
	free(out);
	agg_free(a);

	a = agg_new();
	out = top_text(a, 100, 10);     /* nothing sampled: no table */
	CHECK(strstr(out, "0 samples") && !strstr(out, "%Own"));
	free(out);
	agg_free(a);
}

int main(void)
{
	test_functab();
	test_top_print();
	return unit_done("test_top");
}
