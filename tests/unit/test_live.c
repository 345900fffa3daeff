/* SPDX-License-Identifier: MIT */
/* `top`'s figures (output/live.c): threads and their status split, a thread's functions, bars, cut text. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "output/live.h"
#include "unit.h"

/* Thread 100 runs in spin() (6 samples, 2 of them waiting for the GIL); thread 200 sleeps in nap() (4). */
static struct agg *two_threads(void)
{
	struct agg *a = agg_new();
	uint32_t spin = (uint32_t)agg_loc(a, "spin", "app.py", 5, LOC_PY);
	uint32_t nap = (uint32_t)agg_loc(a, "nap", "app.py", 9, LOC_PY);
	uint32_t top = (uint32_t)agg_loc(a, "main", "app.py", 1, LOC_PY);
	uint32_t s1[] = { top, spin }, s2[] = { top, nap };

	agg_add(a, &(struct stack_tags){ .pid = 1, .tid = 100, .status = ST_RUNNING }, s1, 2, 4);
	agg_add(a, &(struct stack_tags){ .pid = 1, .tid = 100, .status = ST_GIL_WAIT }, s1, 2, 2);
	agg_add(a, &(struct stack_tags){ .pid = 1, .tid = 200, .status = ST_SLEEPING }, s2, 2, 4);
	agg_set_thread_name(a, 1, 200, "napper");
	return a;
}

static const struct func_stat *first(const struct live_view *v)
{
	return &v->ft.f[v->order[0]];
}

static void test_build(void)
{
	struct agg *a = two_threads();
	struct live_view v;

	CHECK_EQ_INT(live_build(a, false, 0, 0, &v), 0);
	CHECK_EQ_INT(v.samples, 10);
	CHECK_EQ_INT(v.status[ST_GIL_WAIT], 2);
	CHECK_EQ_INT(v.nthreads, 2);
	CHECK(v.threads[0].tid == 100 && v.threads[0].samples == 6 && v.threads[0].status[ST_RUNNING] == 4);
	CHECK(v.threads[1].tid == 200 && v.threads[1].name && strcmp(v.threads[1].name, "napper") == 0);
	CHECK_EQ_INT(v.norder, 3);
	CHECK_EQ_STR(first(&v)->name, "spin");
	live_sort(&v, LIVE_BY_TOTAL);
	CHECK_EQ_STR(first(&v)->name, "main");
	live_sort(&v, LIVE_BY_NAME);
	CHECK_EQ_STR(first(&v)->name, "main");
	CHECK_EQ_STR(v.ft.f[v.order[1]].name, "nap");
	live_free(&v);
	/* One thread's functions: the other's are not listed, shares are of its samples. */
	CHECK_EQ_INT(live_build(a, true, 1, 200, &v), 0);
	CHECK_EQ_INT(v.norder, 2);
	CHECK_EQ_INT(v.fsamples, 4);
	CHECK_EQ_STR(first(&v)->name, "nap");
	CHECK_EQ_INT(v.nthreads, 2);    /* the header still shows every thread */
	live_free(&v);
	agg_free(a);
}

/* --async's waiting tasks (wall): their own count, not their thread's samples or status. */
static void test_waiting_tasks(void)
{
	struct agg *a = two_threads();
	struct live_view v;
	uint32_t task = (uint32_t)agg_loc(a, "task fetch", NULL, -1, LOC_PY);
	uint32_t leaf = (uint32_t)agg_loc(a, "[awaiting] asyncio.sleep", NULL, -1, LOC_PY);
	uint32_t s[] = { task, leaf };

	agg_add(a, &(struct stack_tags){ .pid = 1, .tid = 200, .status = ST_UNKNOWN }, s, 2, 5);
	CHECK_EQ_INT(live_build(a, false, 0, 0, &v), 0);
	CHECK_EQ_INT(v.samples, 10);
	CHECK_EQ_INT(v.waiting, 5);
	CHECK_EQ_INT(v.status[ST_UNKNOWN], 0);
	CHECK_EQ_INT(v.fsamples, 15);   /* the functions' shares are of both */
	CHECK(v.threads[1].tid == 200 && v.threads[1].samples == 4 && v.threads[1].waiting == 5);
	CHECK_EQ_STR(first(&v)->name, "spin");
	live_free(&v);
	CHECK_EQ_INT(live_build(a, true, 1, 200, &v), 0);
	CHECK_EQ_INT(v.fsamples, 9);
	live_free(&v);
	agg_free(a);
}

static void test_bar(void)
{
	uint64_t st[ST__COUNT] = { 0 };
	char bar[21];

	st[ST_RUNNING] = 2, st[ST_GIL_WAIT] = 1;
	live_bar(st, 3, bar, 20);
	CHECK_EQ_STR(bar, "RRRRRRRRRRRRRGGGGGGG");
	live_bar(st, 0, bar, 20);
	CHECK_EQ_STR(bar, "....................");
	memset(st, 0, sizeof(st));
	st[ST_SLEEPING] = 999, st[ST_DISK] = 1;
	live_bar(st, 1000, bar, 10);
	CHECK_EQ_STR(bar, "SSSSSSSSSS");
}

static void test_text(void)
{
	struct func_stat f = { .name = "handle", .file = "/srv/app/very/long/path/to/handlers.py", .min_line = 42 };
	struct live_thread t = { .tid = 7, .name = "bad\nname" };
	char out[256];

	live_func_text(&f, out, sizeof(out), 0);
	CHECK_EQ_STR(out, "handle  /srv/app/very/long/path/to/handlers.py:42");
	live_func_text(&f, out, sizeof(out), 30);
	CHECK_EQ_STR(out, "handle  ...h/to/handlers.py:42");
	CHECK_EQ_INT(strlen(out), 30);
	live_func_text(&f, out, sizeof(out), 10);
	CHECK_EQ_STR(out, "handle");
	live_thread_text(&t, out, sizeof(out), 0);
	CHECK_EQ_STR(out, "7 bad\\nname");      /* never a control character on the terminal */
	live_thread_text(&t, out, sizeof(out), 5);
	CHECK_EQ_STR(out, "7 bad");
}

int main(void)
{
	test_build();
	test_waiting_tasks();
	test_bar();
	test_text();
	return unit_done("test_live");
}
