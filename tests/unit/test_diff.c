/* SPDX-License-Identifier: MIT */
/*
 * pybpfprof diff's arithmetic: two profiles side by side in one aggregate
 * (aggregate/compare.c), shares and their change, the collapsed form with two
 * counts (output/diffout.c), and pprof read back (read/pprofread.c),
 * which diff takes as well as collapsed stacks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>
#include <zlib.h>

#include "aggregate/aggregate.h"
#include "read/collapsedread.h"
#include "aggregate/compare.h"
#include "read/pprofread.h"
#include "core/errors.h"
#include "aggregate/status.h"
#include "output/writers.h"
#include "unit.h"

#define BEFORE "main (a.py:1);f (a.py:2) 30\nmain (a.py:1);g (a.py:3) 10\n"
#define AFTER "main (a.py:1);f (a.py:2) 10\nmain (a.py:1);g (a.py:3) 70\nmain (a.py:1);h (a.py:4) 20\n"

static struct agg *read_text(const char *text)
{
	struct agg *a = agg_new();
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	const char *why;
	size_t lineno;

	CHECK(a && in);
	CHECK_EQ_INT(collapsed_read(a, in, &lineno, &why), 0);
	fclose(in);
	return a;
}

/* Index in d->u of the stack whose last frame is named leaf, or -1. */
static int64_t stack_of(const struct agg_diff *d, const char *leaf)
{
	for (uint32_t i = 0; i < agg_nstacks(d->u); i++) {
		const char *name, *file;
		uint32_t n, kind;
		uint64_t c;
		int line;
		const uint32_t *s = agg_stack(d->u, i, &n, &c, NULL);

		agg_loc_info(d->u, s[n - 1], &name, &file, &line, &kind);
		if (!strcmp(name, leaf))
			return i;
	}
	return -1;
}

static void test_build(void)
{
	struct agg *b = read_text(BEFORE), *a = read_text(AFTER);
	struct agg_diff d;
	int64_t f, g, h;

	CHECK_EQ_INT(agg_diff_build(&d, b, a), 0);
	CHECK_EQ_INT(agg_nstacks(d.u), 3);      /* f and g shared, h only after */
	CHECK_EQ_INT(agg_total(d.u), 140);
	CHECK_EQ_INT(d.total[DIFF_BEFORE], 40);
	CHECK_EQ_INT(d.total[DIFF_AFTER], 100);
	f = stack_of(&d, "f"), g = stack_of(&d, "g"), h = stack_of(&d, "h");
	CHECK(f >= 0 && g >= 0 && h >= 0);
	CHECK_EQ_INT(d.count[DIFF_BEFORE][f], 30);
	CHECK_EQ_INT(d.count[DIFF_AFTER][f], 10);
	CHECK_EQ_INT(d.count[DIFF_BEFORE][h], 0);
	CHECK_EQ_INT(d.count[DIFF_AFTER][h], 20);
	CHECK_EQ_INT(d.count[DIFF_BEFORE][g], 10);
	CHECK_EQ_INT(d.count[DIFF_AFTER][g], 70);
	CHECK(agg_diff_scaled(&d, 30) > 74.999 && agg_diff_scaled(&d, 30) < 75.001);
	agg_diff_free(&d);
	/* the same profile twice: each stack counts the same on both sides */
	CHECK_EQ_INT(agg_diff_build(&d, a, a), 0);
	for (uint32_t i = 0; i < agg_nstacks(d.u); i++)
		CHECK(d.count[0][i] == d.count[1][i]);
	agg_diff_free(&d);
	agg_free(a);
	agg_free(b);
}

static char *diff_text(const char *before, const char *after)
{
	struct agg *b = read_text(before), *a = read_text(after);
	char *text = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&text, &len);

	CHECK_EQ_INT(diff_collapsed_write(b, a, o), 0);
	fclose(o);
	agg_free(a);
	agg_free(b);
	return text;
}

static void test_collapsed(void)
{
	char *t = diff_text(BEFORE, AFTER);

	/* BEFORE scaled to AFTER's 100 samples: 30 of 40 is 75 */
	CHECK_EQ_STR(t, "main (a.py:1);f (a.py:2) 75 10\nmain (a.py:1);g (a.py:3) 25 70\n"
			"main (a.py:1);h (a.py:4) 0 20\n");
	free(t);
	/* a scale that is not whole keeps two decimals (flamegraph.pl reads them) */
	t = diff_text("x 1\ny 2\n", "x 5\ny 5\n");
	CHECK_EQ_STR(t, "x 3.33 5\ny 6.67 5\n");
	free(t);
	/* lines that read the same are one line, whatever kept them apart (the threads) */
	t = diff_text("thread 1 a;x 1\n", "x 1\n");
	CHECK_EQ_STR(t, "thread 1 a;x 1 0\nx 0 1\n");
	free(t);
}

/* pprof_write's output gunzipped, as profload.c hands it to pprof_read. */
static uint8_t *pprof_bytes(const struct agg *a, size_t *len)
{
	struct profile_meta m = { .mode = "cpu", .hz = 99 };
	char *gz = NULL;
	size_t gzlen = 0, cap = 1 << 20;
	FILE *o = open_memstream(&gz, &gzlen);
	uint8_t *out = malloc(cap);
	z_stream z = { 0 };

	CHECK_EQ_INT(pprof_write(a, &m, o), 0);
	fclose(o);
	CHECK_EQ_INT(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (uint8_t *)gz, z.avail_in = (uInt)gzlen;
	z.next_out = out, z.avail_out = (uInt)cap;
	CHECK_EQ_INT(inflate(&z, Z_FINISH), Z_STREAM_END);
	*len = z.total_out;
	inflateEnd(&z);
	free(gz);
	return out;
}

static void test_pprof_read(void)
{
	const char *text = "thread 7 worker;main (a.py:1);f (a.py:2);[running] 30\n"
			   "thread 7 worker;main (a.py:1);g (/usr/lib/x.py);[gil wait] 10\n";
	struct agg *src = read_text(text), *back = agg_new();
	const char *why = NULL;
	char *out = NULL;
	size_t len, olen = 0;
	uint8_t *buf = pprof_bytes(src, &len);
	FILE *o;

	CHECK_EQ_INT(pprof_read(back, buf, len, &why), 0);
	CHECK_EQ_INT(agg_total(back), 40);
	CHECK_EQ_STR(agg_thread_name(back, 0, 7), "worker");
	o = open_memstream(&out, &olen);
	collapsed_write(back, &(struct profile_meta){ .mode = "cpu" }, o);
	fclose(o);
	/* Python frames as they were; thread and status are tags again, not frames */
	CHECK_EQ_STR(out, "main (a.py:1);f (a.py:2) 30\nmain (a.py:1);g (/usr/lib/x.py) 10\n");
	for (uint32_t i = 0; i < agg_nstacks(back); i++) {
		const struct stack_tags *t;
		uint32_t n;
		uint64_t c;

		agg_stack(back, i, &n, &c, &t);
		CHECK_EQ_INT(t->tid, 7);
		CHECK(t->status == (c == 30 ? ST_RUNNING : ST_GIL_WAIT));
	}
	free(out);
	/* text is not pprof, and neither is a damaged profile */
	CHECK_EQ_INT(pprof_read(back, (const uint8_t *)text, strlen(text), &why), -PBP_E_INVAL);
	CHECK(why && strstr(why, "not a pprof profile"));
	CHECK_EQ_INT(pprof_read(back, buf, len / 2, &why), -PBP_E_INVAL);
	free(buf);
	agg_free(back);
	agg_free(src);
}

int main(void)
{
	test_build();
	test_collapsed();
	test_pprof_read();
	return unit_done("test_diff");
}
