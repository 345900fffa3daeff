/* SPDX-License-Identifier: MIT */
/*
 * The agent's history (agent/history.c) and agg_merge under it: slices
 * merge by the time they end, keep their processes' labels and thread
 * names, filter by process; old slices and slices over the budget go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/history.h"
#include "aggregate/aggregate.h"
#include "aggregate/merge.h"
#include "core/errors.h"
#include "unit.h"

#define S 1000000000ull

/* An aggregate with count samples of pid in fn, its process in service svc. */
static struct agg *slice_of(uint32_t pid, const char *svc, const char *fn, uint64_t count)
{
	struct agg *a = agg_new();
	struct stack_tags t = { .pid = pid, .tid = pid + 1 };
	struct proc_meta m = { .pid = pid };
	uint32_t locs[2];

	m.label[PL_SERVICE] = svc;
	m.label[PL_PYTHON_VERSION] = "3.13.0";
	agg_set_process(a, &m);
	agg_set_thread_name(a, pid, pid + 1, "worker");
	locs[0] = (uint32_t)agg_loc(a, "<module>", "app.py", 1, LOC_PY);
	locs[1] = (uint32_t)agg_loc(a, fn, "app.py", 7, LOC_PY);
	agg_add(a, &t, locs, 2, count);
	return a;
}

static uint64_t count_fn(const struct agg *a, const char *fn)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < agg_nstacks(a); i++) {
		const struct stack_tags *t;
		const char *name, *file;
		uint32_t n, kind;
		uint64_t c;
		int line;
		const uint32_t *s = agg_stack(a, i, &n, &c, &t);

		agg_loc_info(a, s[n - 1], &name, &file, &line, &kind);
		if (strcmp(name, fn) == 0)
			total += c;
	}
	return total;
}

static bool only_pid(const struct proc_meta *m, uint32_t pid, void *ctx)
{
	(void)m;
	return pid == *(uint32_t *)ctx;
}

static void test_merge(void)
{
	struct agg *a = slice_of(10, "shop", "pay", 3), *b = slice_of(20, "cart", "add", 5), *d = agg_new();
	uint32_t pid = 20;
	const struct proc_meta *m;

	CHECK_EQ_INT(agg_merge(d, a, NULL, NULL), 0);
	CHECK_EQ_INT(agg_merge(d, a, NULL, NULL), 0);
	CHECK_EQ_INT(agg_merge(d, b, only_pid, &pid), 0);
	CHECK_EQ_INT(agg_total(d), 3 + 3 + 5);
	CHECK_EQ_INT(agg_nstacks(d), 2);        /* equal stacks add up */
	CHECK_EQ_INT(count_fn(d, "pay"), 6);
	m = agg_process(d, 20);
	CHECK(m && strcmp(m->label[PL_SERVICE], "cart") == 0 && strcmp(m->label[PL_POD], "") == 0);
	CHECK_EQ_STR(agg_thread_name(d, 10, 11), "worker");
	pid = 99;
	agg_reset(d);
	CHECK_EQ_INT(agg_merge(d, a, only_pid, &pid), 0);
	CHECK_EQ_INT(agg_total(d), 0);
	agg_free(a), agg_free(b), agg_free(d);
}

static int seen_n;
static char seen[8][32];

static int note_service(const char *name, void *ctx)
{
	(void)ctx;
	if (seen_n < 8)
		snprintf(seen[seen_n++], sizeof(seen[0]), "%s", name);
	return 0;
}

static void test_history(void)
{
	struct history *h = history_new(10 * S, 64 << 20);
	struct history_stats st;
	struct span got;
	struct agg *d = agg_new();

	for (uint64_t i = 0; i < 5; i++) {
		struct agg *a = slice_of(10 + (uint32_t)(i % 2), i % 2 ? "cart" : "shop", "f", 1 + i);

		CHECK_EQ_INT(history_add(h, a, (100 + i) * S, (101 + i) * S), 0);
		agg_free(a);
	}
	/* slices end at 101..105: (102, 104] holds those ending at 103 and 104 */
	CHECK_EQ_INT(history_merge(h, d, 102 * S, 104 * S, NULL, NULL, &got), 0);
	CHECK_EQ_INT(agg_total(d), 3 + 4);
	CHECK_EQ_INT(got.start_ns, 102 * S);
	CHECK_EQ_INT(got.end_ns, 104 * S);
	seen_n = 0;
	CHECK_EQ_INT(history_services(h, 0, 200 * S, note_service, NULL), 0);
	CHECK_EQ_INT(seen_n, 2);
	CHECK_EQ_STR(seen[0], "shop");
	CHECK_EQ_STR(seen[1], "cart");
	agg_reset(d);
	CHECK_EQ_INT(history_merge(h, d, 300 * S, 400 * S, NULL, NULL, &got), 0);
	CHECK_EQ_INT(agg_total(d), 0);
	CHECK_EQ_INT(got.start_ns, 0);
	/* a slice 20 s later: everything older than 10 s before it goes */
	{
		struct agg *a = slice_of(12, "late", "g", 1);

		history_add(h, a, 124 * S, 125 * S);
		agg_free(a);
	}
	history_stats(h, &st);
	CHECK_EQ_INT(st.slices, 1);
	CHECK_EQ_INT(st.dropped, 0);
	history_free(h);

	/* A budget smaller than two slices: the newest stays, the others are dropped and counted. */
	h = history_new(100 * S, 1);
	for (uint64_t i = 0; i < 3; i++) {
		struct agg *a = slice_of(10, "shop", "f", 1);

		history_add(h, a, (100 + i) * S, (101 + i) * S);
		agg_free(a);
	}
	history_stats(h, &st);
	CHECK_EQ_INT(st.slices, 1);
	CHECK_EQ_INT(st.dropped, 2);
	CHECK(st.bytes > 0);
	history_free(h);
	agg_free(d);
}

/*
 * The agent's slices taken over, as the loop closes each second: the live
 * aggregate goes on with its locations (same ids, new ones in later
 * segments) while the history reads the counts it gave, which stay right.
 */
static void test_take(void)
{
	struct history *h = history_new(100 * S, 64 << 20);
	struct agg *live = agg_new(), *d = agg_new();
	struct stack_tags t = { .pid = 10, .tid = 11 };
	struct proc_meta m = { .pid = 10 };
	struct history_stats st;
	struct span got;
	char fn[32];
	uint32_t locs[2];
	int64_t first;

	m.label[PL_SERVICE] = "shop";
	for (uint64_t sec = 0; sec < 3; sec++) {
		CHECK_EQ_INT(agg_set_process(live, &m), 0);
		CHECK_EQ_INT(agg_set_thread_name(live, 10, 11, "worker"), 0);
		first = agg_loc(live, "<module>", "app.py", 1, LOC_PY);
		CHECK_EQ_INT(first, 0);         /* kept across the takes */
		locs[0] = (uint32_t)first;
		/* 600 new functions a second: the third second's ids are past two segments */
		for (int i = 0; i < 600; i++) {
			snprintf(fn, sizeof(fn), "f%d_%d", (int)sec, i);
			locs[1] = (uint32_t)agg_loc(live, fn, "app.py", i, LOC_PY);
			CHECK_EQ_INT(agg_add(live, &t, locs, 2, 1 + sec), 0);
		}
		CHECK_EQ_INT(history_take(h, live, (100 + sec) * S, (101 + sec) * S), 0);
		CHECK_EQ_INT(agg_total(live), 0);
		CHECK_EQ_INT(agg_nstacks(live), 0);
		CHECK(agg_process(live, 10) == NULL);
		agg_reset_stacks(live);
	}
	CHECK_EQ_INT(agg_nlocs(live), 1 + 3 * 600);
	/* the first second alone, read after two more were taken and the live one grew */
	CHECK_EQ_INT(history_merge(h, d, 100 * S, 101 * S, NULL, NULL, &got), 0);
	CHECK_EQ_INT(agg_total(d), 600);
	CHECK_EQ_INT(count_fn(d, "f0_599"), 1);
	CHECK_EQ_INT(count_fn(d, "f1_0"), 0);
	CHECK_EQ_STR(agg_thread_name(d, 10, 11), "worker");
	CHECK(agg_process(d, 10) && strcmp(agg_process(d, 10)->label[PL_SERVICE], "shop") == 0);
	agg_reset(d);
	CHECK_EQ_INT(history_merge(h, d, 0, 200 * S, NULL, NULL, &got), 0);
	CHECK_EQ_INT(agg_total(d), 600 * (1 + 2 + 3));
	CHECK_EQ_INT(count_fn(d, "f2_599"), 3);
	history_stats(h, &st);
	CHECK_EQ_INT(st.slices, 3);
	/* the live aggregate starts anew: the slices keep the locations they read */
	agg_reset(live);
	agg_reset(d);
	CHECK_EQ_INT(history_merge(h, d, 101 * S, 102 * S, NULL, NULL, &got), 0);
	CHECK_EQ_INT(count_fn(d, "f1_17"), 2);
	history_free(h);
	agg_free(live);
	agg_free(d);
}

/* A taken aggregate adds no location: its ids are its taker's. */
static void test_taken_adds_none(void)
{
	struct agg *live = agg_new(), *t;
	struct stack_tags tags = { .pid = 1, .tid = 1 };
	uint32_t loc = (uint32_t)agg_loc(live, "f", "a.py", 1, LOC_PY);

	CHECK_EQ_INT(agg_add(live, &tags, &loc, 1, 5), 0);
	t = agg_take(live);
	CHECK(t != NULL);
	CHECK_EQ_INT(agg_total(t), 5);
	CHECK_EQ_INT(agg_nlocs(t), 1);
	CHECK_EQ_INT(agg_loc(t, "g", "a.py", 2, LOC_PY), -PBP_E_INVAL);
	CHECK_EQ_INT(agg_loc(live, "g", "a.py", 2, LOC_PY), 1);
	CHECK_EQ_INT(agg_nlocs(t), 1);
	agg_free(live);         /* the taker first: the shared locations stay for t */
	{
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(t, 0, &name, &file, &line, &kind);
		CHECK_EQ_STR(name, "f");
	}
	agg_free(t);
}

int main(void)
{
	test_merge();
	test_history();
	test_take();
	test_taken_adds_none();
	return unit_done("test_history");
}
