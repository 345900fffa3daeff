/* SPDX-License-Identifier: MIT */
/*
 * The aggregate's thread table: a process that keeps starting threads
 * (tests/integration/targets/churn.py) must leave it bounded, and the
 * profile still right: every sample counted, the fold named in every format.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/merge.h"
#include "read/collapsedread.h"
#include "aggregate/status.h"
#include "output/writers.h"
#include "unit.h"

/* One sample of thread tid: its "thread TID name" root label, then one Python frame. */
static void sample(struct agg *a, uint32_t pid, uint32_t tid, uint64_t count)
{
	struct stack_tags t = { .pid = pid, .tid = tid, .status = ST_RUNNING };
	char label[64];
	uint32_t locs[2];

	snprintf(label, sizeof(label), "thread %u Thread-%u", tid, tid);
	locs[0] = (uint32_t)agg_loc(a, label, NULL, -1, LOC_THREAD);
	locs[1] = (uint32_t)agg_loc(a, "short", "churn.py", 30, LOC_PY);
	CHECK_EQ_INT(agg_add(a, &t, locs, 2, count), 0);
}

/* Stacks whose first location is the label `label`, and the tid of their tags. */
static uint32_t stacks_with_label(const struct agg *a, const char *label, uint32_t *tid)
{
	uint32_t hits = 0;

	for (uint32_t i = 0; i < agg_nstacks(a); i++) {
		const struct stack_tags *t;
		const char *name, *file;
		uint64_t count;
		uint32_t n, kind;
		int line;
		const uint32_t *locs = agg_stack(a, i, &n, &count, &t);

		agg_loc_info(a, locs[0], &name, &file, &line, &kind);
		if (kind == LOC_THREAD && strcmp(name, label) == 0) {
			hits++;
			*tid = t->tid;
		}
	}
	return hits;
}

/* What agg_print_folds says, as a string to free (never NULL). */
static char *folds_text(const struct agg *a)
{
	char *text = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&text, &len);

	if (!o)
		abort();
	agg_print_folds(a, o);
	fclose(o);
	return text;
}

static void test_threads_past_the_cap_fold(void)
{
	struct agg *a = agg_new();
	uint32_t tid = 99;
	char *text;

	for (uint32_t i = 0; i < 3 * AGG_MAX_THREADS; i++)
		sample(a, 10, 1000 + i, 1);
	/* one stack per kept thread, one for the rest */
	CHECK_EQ_INT(agg_nstacks(a), AGG_MAX_THREADS + 1);
	CHECK_EQ_INT(agg_total(a), 3 * AGG_MAX_THREADS);
	CHECK_EQ_INT(agg_folded(a, 10), 2 * AGG_MAX_THREADS);
	CHECK_EQ_STR(agg_thread_name(a, 10, AGG_OTHER_TID), AGG_OTHER_NAME);
	/* the folded stacks carry the fold's label and tid, not the threads' */
	CHECK_EQ_INT(stacks_with_label(a, AGG_OTHER_LABEL, &tid), 1);
	CHECK_EQ_INT(tid, AGG_OTHER_TID);
	CHECK_EQ_INT(stacks_with_label(a, "thread 9000 Thread-9000", &tid), 0);
	/* a thread that had its identity keeps it */
	sample(a, 10, 1000, 5);
	CHECK_EQ_INT(agg_nstacks(a), AGG_MAX_THREADS + 1);
	CHECK_EQ_INT(stacks_with_label(a, "thread 1000 Thread-1000", &tid), 1);
	CHECK_EQ_INT(tid, 1000);
	CHECK_EQ_INT(agg_folded(a, 10), 2 * AGG_MAX_THREADS);

	/* said once, in the summary */
	text = folds_text(a);
	CHECK(strstr(text, "pid 10 ") && strstr(text, "8192 samples") &&
	      strstr(text, AGG_OTHER_LABEL) && strchr(text, '\n') == text + strlen(text) - 1);
	free(text);
	agg_free(a);
}

static void test_cap_is_per_process(void)
{
	struct agg *a = agg_new();
	uint32_t tid = 0;
	char *text;

	for (uint32_t i = 0; i < AGG_MAX_THREADS + 10; i++)
		sample(a, 10, 1000 + i, 1);
	sample(a, 11, 5, 1);
	CHECK_EQ_INT(stacks_with_label(a, "thread 5 Thread-5", &tid), 1);
	CHECK_EQ_INT(tid, 5);
	CHECK_EQ_INT(agg_folded(a, 10), 10);
	CHECK_EQ_INT(agg_folded(a, 11), 0);
	CHECK(agg_thread_name(a, 11, AGG_OTHER_TID) == NULL);

	text = folds_text(a);
	CHECK(strstr(text, "pid 10 ") && !strstr(text, "pid 11 "));
	free(text);
	agg_free(a);
}

/* Below the cap nothing changes: no fold, nothing printed. */
static void test_no_fold_below_the_cap(void)
{
	struct agg *a = agg_new();
	char *text;

	for (uint32_t i = 0; i < AGG_MAX_THREADS; i++)
		sample(a, 10, 1000 + i, 2);
	CHECK_EQ_INT(agg_nstacks(a), AGG_MAX_THREADS);
	CHECK_EQ_INT(agg_folded(a, 10), 0);
	CHECK(agg_thread_name(a, 10, AGG_OTHER_TID) == NULL);
	text = folds_text(a);
	CHECK_EQ_INT(strlen(text), 0);
	free(text);
	agg_free(a);
}

/*
 * Names of threads never sampled: the newest AGG_MAX_NAMED stay, the older
 * go (and every entry left must still be found where it moved to).
 */
static void test_names_of_unsampled_threads_are_bounded(void)
{
	struct agg *a = agg_new();
	const uint32_t n = 10 * AGG_MAX_NAMED;
	char name[32];
	uint32_t bad = 0;

	agg_set_thread_name(a, 20, 7, "worker");
	sample(a, 20, 7, 1);            /* sampled: its name stays */
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "Thread-%u", i);
		CHECK_EQ_INT(agg_set_thread_name(a, 20, 100 + i, name), 0);
	}
	CHECK_EQ_STR(agg_thread_name(a, 20, 7), "worker");
	for (uint32_t i = 0; i < n; i++) {
		const char *got = agg_thread_name(a, 20, 100 + i);

		snprintf(name, sizeof(name), "Thread-%u", i);
		if (i < n - AGG_MAX_NAMED)
			bad += got != NULL;
		else
			bad += !got || strcmp(got, name) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	/* forgotten names cost no identity: other threads still get their own */
	sample(a, 20, 8, 1);
	CHECK_EQ_INT(agg_folded(a, 20), 0);
	agg_free(a);
}

/* Named first, sampled later (the usual order): the name stays with the identity. */
static void test_named_then_sampled(void)
{
	struct agg *a = agg_new();

	CHECK_EQ_INT(agg_set_thread_name(a, 30, 3, "first"), 0);
	CHECK_EQ_INT(agg_set_thread_name(a, 30, 3, "renamed"), 0);
	sample(a, 30, 3, 1);
	for (uint32_t i = 0; i < 2 * AGG_MAX_NAMED; i++)
		agg_set_thread_name(a, 30, 1000 + i, "churn");
	CHECK_EQ_STR(agg_thread_name(a, 30, 3), "renamed");
	CHECK(agg_thread_name(a, 30, 4) == NULL);
	agg_free(a);
}

static void test_thread_loc(void)
{
	struct agg *a = agg_new();
	const char *name, *file;
	uint32_t kind;
	int line;
	int64_t id;

	id = agg_thread_loc(a, 40, 7, 0, "worker");
	CHECK(id >= 0);
	agg_loc_info(a, (uint32_t)id, &name, &file, &line, &kind);
	CHECK_EQ_STR(name, "thread 7 worker");
	CHECK_EQ_INT(kind, LOC_THREAD);
	id = agg_thread_loc(a, 40, 8, 0, "");
	agg_loc_info(a, (uint32_t)id, &name, &file, &line, &kind);
	CHECK_EQ_STR(name, "thread 8 ?");
	for (uint32_t i = 0; i < AGG_MAX_THREADS; i++)
		agg_thread_loc(a, 40, 100 + i, 0, "churn");
	id = agg_thread_loc(a, 40, 50000, 0, "late");
	agg_loc_info(a, (uint32_t)id, &name, &file, &line, &kind);
	CHECK_EQ_STR(name, AGG_OTHER_LABEL);
	CHECK_EQ_INT(kind, LOC_THREAD);
	/* a thread that got its identity still has it */
	id = agg_thread_loc(a, 40, 7, 0, "worker");
	agg_loc_info(a, (uint32_t)id, &name, &file, &line, &kind);
	CHECK_EQ_STR(name, "thread 7 worker");
	/* labels: the kept threads' and one for the fold */
	CHECK_EQ_INT(agg_nlocs(a), AGG_MAX_THREADS + 1);
	agg_free(a);
}

/* agg_bump counts into the stack agg_add last counted into; none after a fold. */
static void test_last_and_bump(void)
{
	struct agg *a = agg_new();
	struct stack_tags t = { .pid = 3, .tid = 4, .status = ST_SLEEPING };
	uint32_t locs[1] = { (uint32_t)agg_loc(a, "wait", "w.py", 9, LOC_PY) };
	uint32_t n;
	uint64_t count;
	const struct stack_tags *tags;
	int64_t id;

	CHECK_EQ_INT(agg_last(a), -1);
	CHECK_EQ_INT(agg_add(a, &t, locs, 1, 1), 0);
	id = agg_last(a);
	CHECK_EQ_INT(id, 0);
	CHECK_EQ_INT(agg_add(a, &t, locs, 1, 2), 0);     /* found, not new */
	CHECK_EQ_INT(agg_last(a), id);
	agg_bump(a, (uint32_t)id, 5);
	agg_stack(a, (uint32_t)id, &n, &count, &tags);
	CHECK_EQ_INT(count, 8);
	CHECK_EQ_INT(agg_total(a), 8);
	CHECK_EQ_INT(agg_nstacks(a), 1);
	agg_bump(a, 99, 1);                             /* no such stack: ignored */
	CHECK_EQ_INT(agg_total(a), 8);
	for (uint32_t i = 0; i < AGG_MAX_THREADS; i++)
		sample(a, 3, 100 + i, 1);
	sample(a, 3, 90000, 1);                         /* past the cap: folded */
	CHECK_EQ_INT(agg_last(a), -1);
	agg_free(a);
}

/* A folded profile written as collapsed stacks reads back with the fold named. */
static void test_fold_round_trip(void)
{
	struct agg *a = agg_new(), *b = agg_new();
	char *text = NULL;
	size_t len = 0, lineno = 0;
	struct profile_meta m = { .mode = "cpu", .hz = 99 };
	const char *why;
	uint32_t tid = 99;
	FILE *o;

	for (uint32_t i = 0; i < AGG_MAX_THREADS + 3; i++)
		sample(a, 10, 1000 + i, 1);
	o = open_memstream(&text, &len);
	CHECK_EQ_INT(collapsed_write(a, &m, o), 0);
	fclose(o);
	CHECK(strstr(text, AGG_OTHER_LABEL ";short (churn.py:30) 3\n") != NULL);
	o = fmemopen(text, len, "r");
	CHECK_EQ_INT(collapsed_read(b, o, &lineno, &why), 0);
	fclose(o);
	CHECK_EQ_INT(agg_total(b), AGG_MAX_THREADS + 3);
	CHECK_EQ_INT(stacks_with_label(b, AGG_OTHER_LABEL, &tid), 1);
	CHECK_EQ_INT(tid, AGG_OTHER_TID);
	CHECK_EQ_STR(agg_thread_name(b, 0, AGG_OTHER_TID), AGG_OTHER_NAME);
	free(text);
	agg_free(a);
	agg_free(b);
}

/* Without -t the fold has no label in the stacks: speedscope names it from the table. */
static void test_fold_named_in_speedscope(void)
{
	struct agg *a = agg_new();
	struct profile_meta m = { .mode = "cpu", .hz = 99 };
	struct stack_tags t = { .pid = 10, .status = ST_RUNNING };
	uint32_t loc = (uint32_t)agg_loc(a, "short", "churn.py", 30, LOC_PY);
	char *text = NULL;
	size_t len = 0;
	FILE *o;

	for (uint32_t i = 0; i < AGG_MAX_THREADS + 1; i++) {
		t.tid = 1000 + i;
		agg_add(a, &t, &loc, 1, 1);
	}
	o = open_memstream(&text, &len);
	CHECK_EQ_INT(speedscope_write(a, &m, o), 0);
	fclose(o);
	CHECK(strstr(text, "\"name\":\"thread 0 " AGG_OTHER_NAME "\"") != NULL);
	CHECK(strstr(text, "all threads") == NULL);
	free(text);
	agg_free(a);
}

/* One process root shared by every stack goes; two different ones stay. */
static void test_drop_single_root(void)
{
	struct agg *a = agg_new();
	struct stack_tags t = { .pid = 7, .tid = 7 };
	uint32_t p7 = (uint32_t)agg_loc(a, "process 7 python3", NULL, -1, LOC_PROCESS);
	uint32_t p8 = (uint32_t)agg_loc(a, "process 8 python3", NULL, -1, LOC_PROCESS);
	uint32_t f = (uint32_t)agg_loc(a, "work", "w.py", 3, LOC_PY);
	uint32_t g = (uint32_t)agg_loc(a, "idle", "w.py", 9, LOC_PY);
	uint32_t s1[2] = { p7, f }, s2[2] = { p7, g }, s3[2] = { p8, f }, n;
	uint64_t count;
	const uint32_t *locs;

	CHECK_EQ_INT(agg_drop_single_root(a), false);   /* no stack: nothing to drop */
	agg_add(a, &t, s1, 2, 3);
	agg_add(a, &t, s2, 2, 1);
	CHECK_EQ_INT(agg_drop_single_root(a), true);
	locs = agg_stack(a, 0, &n, &count, NULL);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(locs[0], f);
	CHECK_EQ_INT(count, 3);
	CHECK_EQ_INT(agg_total(a), 4);
	CHECK_EQ_INT(agg_drop_single_root(a), false);   /* none left */
	agg_free(a);
	a = agg_new();      /* the same locations, in the same order, have the same ids */
	agg_loc(a, "process 7 python3", NULL, -1, LOC_PROCESS);
	agg_loc(a, "process 8 python3", NULL, -1, LOC_PROCESS);
	agg_loc(a, "work", "w.py", 3, LOC_PY);
	agg_add(a, &t, s1, 2, 1);
	t.pid = t.tid = 8;
	agg_add(a, &t, s3, 2, 1);
	CHECK_EQ_INT(agg_drop_single_root(a), false);
	agg_stack(a, 1, &n, &count, NULL);
	CHECK_EQ_INT(n, 2);
	agg_free(a);
}

/*
 * A window of the agent closed: its counts, threads and processes go, its
 * locations stay with their ids, so the next window's frames are named
 * with no new location; a merge still copies only the locations used.
 */
static void test_reset_stacks_keeps_locations(void)
{
	struct agg *a = agg_new(), *dst = agg_new();
	struct proc_meta m = { .pid = 7 };
	uint32_t f, g, nlocs;

	sample(a, 7, 70, 2);
	f = (uint32_t)agg_loc(a, "short", "churn.py", 30, LOC_PY);
	g = (uint32_t)agg_loc(a, "unused", "churn.py", 40, LOC_PY);
	CHECK_EQ_INT(agg_set_process(a, &m), 0);
	CHECK_EQ_INT(agg_set_thread_name(a, 7, 71, "named"), 0);
	nlocs = agg_nlocs(a);
	agg_reset_stacks(a);
	CHECK_EQ_INT(agg_total(a), 0);
	CHECK_EQ_INT(agg_nstacks(a), 0);
	CHECK_EQ_INT(agg_last(a), -1);
	CHECK(agg_process(a, 7) == NULL);
	CHECK(agg_thread_name(a, 7, 71) == NULL);
	CHECK_EQ_INT(agg_nlocs(a), nlocs);
	CHECK_EQ_INT(agg_loc(a, "short", "churn.py", 30, LOC_PY), f);
	CHECK_EQ_INT(agg_loc(a, "unused", "churn.py", 40, LOC_PY), g);
	sample(a, 7, 70, 5);
	CHECK_EQ_INT(agg_nlocs(a), nlocs);      /* the same frames: no location added */
	CHECK_EQ_INT(agg_total(a), 5);
	CHECK_EQ_INT(agg_nstacks(a), 1);
	CHECK_EQ_INT(agg_merge(dst, a, NULL, NULL), 0);
	CHECK_EQ_INT(agg_nlocs(dst), 2);        /* the stack's two, not the one no stack has */
	CHECK_EQ_INT(agg_total(dst), 5);
	/* Past AGG_KEEP_LOCS (and with native mappings) it is agg_reset. */
	for (uint32_t i = 0; agg_nlocs(a) <= AGG_KEEP_LOCS; i++)
		agg_loc(a, "many", "many.py", (int)i, LOC_PY);
	agg_reset_stacks(a);
	CHECK_EQ_INT(agg_nlocs(a), 0);
	agg_loc(a, "short", "churn.py", 30, LOC_PY);
	CHECK(agg_nat(a) != NULL);
	agg_reset_stacks(a);
	CHECK_EQ_INT(agg_nlocs(a), 0);
	agg_free(dst);
	agg_free(a);
}

int main(void)
{
	test_reset_stacks_keeps_locations();
	test_drop_single_root();
	test_threads_past_the_cap_fold();
	test_cap_is_per_process();
	test_no_fold_below_the_cap();
	test_names_of_unsampled_threads_are_bounded();
	test_named_then_sampled();
	test_thread_loc();
	test_last_and_bump();
	test_fold_round_trip();
	test_fold_named_in_speedscope();
	return unit_done("aggregate");
}
