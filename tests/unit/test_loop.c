/* SPDX-License-Identifier: MIT */
/*
 * The collection loop (loop.c) with no sampler: timers run in table order
 * when due, once or every period or when deadlines kept elsewhere pass;
 * one returning false ends the run; sleeps stop at the next deadline; a
 * closed window goes to every sink, then the aggregate is empty; a timer
 * with a ctx of its own is given it.
 */
#include <stdlib.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "sample/loop.h"
#include "unit.h"

#define MS 1000000ull

struct world {
	struct loop l;
	char order[64];         /* timers by letter, in the order they ran */
	int n;
	uint64_t longest_wait, waits, zero_waits;
	uint64_t elsewhere;     /* a deadline kept outside the loop */
	int ends_after;         /* timer 'e' ends the run on this run of it */
	volatile sig_atomic_t stop;
};

static void note(struct world *w, char c)
{
	if (w->n + 1 < (int)sizeof(w->order))
		w->order[w->n++] = c;
}

static void fake_wait(void *ctx, uint64_t ns)
{
	struct world *w = ctx;
	struct timespec ts = { 0, (long)ns };

	w->waits++;
	w->zero_waits += ns == 0;
	if (ns > w->longest_wait)
		w->longest_wait = ns;
	nanosleep(&ts, NULL);
}

static bool once_a(void *ctx, struct timer *t, uint64_t now)
{
	(void)t, (void)now;
	note(ctx, 'a');
	return true;
}

static bool every_b(void *ctx, struct timer *t, uint64_t now)
{
	(void)t, (void)now;
	note(ctx, 'b');
	return true;
}

/* Keeps its phase: due on a grid from its first deadline, whatever the lateness. */
static bool phase_c(void *ctx, struct timer *t, uint64_t now)
{
	note(ctx, 'c');
	while (t->next <= now)
		t->next += t->period;
	return true;
}

static bool elsewhere_d(void *ctx, struct timer *t, uint64_t now)
{
	struct world *w = ctx;

	(void)t;
	note(w, 'd');
	CHECK(now >= w->elsewhere);
	w->elsewhere = 0;       /* done: none until set again */
	return true;
}

static uint64_t due_d(void *ctx)
{
	return ((struct world *)ctx)->elsewhere;
}

static bool end_e(void *ctx, struct timer *t, uint64_t now)
{
	struct world *w = ctx;

	(void)t, (void)now;
	note(w, 'e');
	return --w->ends_after > 0;
}

/* A timer with a ctx of its own: given it, for its deadline and its run, not the loop's. */
static uint64_t own_due(void *ctx)
{
	struct world *other = ctx;

	note(other, 'u');
	return TIMER_NOW;
}

static bool own_f(void *ctx, struct timer *t, uint64_t now)
{
	(void)t, (void)now;
	note(ctx, 'f');
	return false;
}

static void setup(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->l.longest = 50 * MS;
	w->l.wait = fake_wait;
	w->l.ctx = w;
	w->l.stop = &w->stop;
}

static int count(const struct world *w, char c)
{
	int n = 0;

	for (int i = 0; i < w->n; i++)
		n += w->order[i] == c;
	return n;
}

static void test_order_and_end(void)
{
	struct world w;
	uint64_t start;

	setup(&w);
	start = loop_now();
	w.ends_after = 1;
	/* Due at once, all of them: table order. The end comes first, so nothing after it ran. */
	loop_add(&w.l, &(struct timer){ .next = TIMER_NOW, .fn = end_e });
	loop_add(&w.l, &(struct timer){ .next = TIMER_NOW, .fn = once_a });
	loop_run(&w.l);
	CHECK_EQ_INT(w.n, 1);
	CHECK_EQ_INT(w.order[0], 'e');
	CHECK_EQ_INT(w.zero_waits, 1);          /* something was due: no sleep */

	setup(&w);
	w.ends_after = 1;
	loop_add(&w.l, &(struct timer){ .next = TIMER_NOW, .fn = once_a });
	loop_add(&w.l, &(struct timer){ .period = 5 * MS, .next = start, .fn = every_b });
	loop_add(&w.l, &(struct timer){ .next = loop_now() + 40 * MS, .fn = end_e });
	loop_run(&w.l);
	CHECK_EQ_INT(w.order[0], 'a');
	CHECK_EQ_INT(w.order[1], 'b');
	CHECK_EQ_INT(count(&w, 'a'), 1);        /* once */
	CHECK(count(&w, 'b') >= 2);             /* every 5 ms for 40 ms: at most 9 */
	CHECK(count(&w, 'b') <= 9);
	CHECK_EQ_INT(w.order[w.n - 1], 'e');
	CHECK(loop_now() - start >= 40 * MS);
	CHECK(w.longest_wait <= 5 * MS);        /* never slept past the next deadline */
}

static void test_longest_and_stop(void)
{
	struct world w;

	setup(&w);
	w.l.longest = 2 * MS;
	w.ends_after = 1;
	loop_add(&w.l, &(struct timer){ .next = loop_now() + 20 * MS, .fn = end_e });
	loop_run(&w.l);
	/* Samples wait no longer than that. (How many waits it took is the
	   scheduler's to say: a loaded machine oversleeps each one.) */
	CHECK(w.longest_wait <= 2 * MS);

	setup(&w);
	w.stop = 1;             /* a signal came before: nothing runs */
	loop_add(&w.l, &(struct timer){ .next = TIMER_NOW, .fn = once_a });
	loop_run(&w.l);
	CHECK_EQ_INT(w.n, 0);
}

static void test_phase_and_elsewhere(void)
{
	struct world w;
	uint64_t start = loop_now();

	setup(&w);
	w.ends_after = 1;
	w.elsewhere = start + 10 * MS;
	loop_add(&w.l, &(struct timer){ .due = due_d, .fn = elsewhere_d });
	loop_add(&w.l, &(struct timer){ .period = 10 * MS, .next = start + 10 * MS, .fn = phase_c });
	loop_add(&w.l, &(struct timer){ .next = start + 35 * MS, .fn = end_e });
	loop_run(&w.l);
	CHECK_EQ_INT(count(&w, 'd'), 1);        /* once: its deadline was cleared */
	CHECK(count(&w, 'c') >= 1);
	/*
	 * At 10, 20, 30 ms; a loop that overslept 35 ms past 40 ran it a fourth
	 * time before the end: at most once per grid point it left behind.
	 */
	CHECK((uint64_t)count(&w, 'c') <= (w.l.timers[1].next - start) / (10 * MS) - 1);
	/* Still on its grid, however late it ran (a busy machine may skip a point). */
	CHECK_EQ_INT((w.l.timers[1].next - start) % (10 * MS), 0);
	CHECK(w.l.timers[1].next >= start + 20 * MS);
}

/* ------------------------------------------------------------ windows */

struct got {
	int calls, order[4];
	uint64_t total, start, end;
	int fail;               /* what sink 0 returns */
	int resets;
};

static struct got got;

static int sink_n(int i, const struct agg *a, const struct window *w)
{
	got.order[got.calls++] = i;
	got.total = agg_total(a);
	got.start = w->start_ns;
	got.end = w->end_ns;
	return i == 0 ? got.fail : 0;
}

static int sink0(void *ctx, const struct agg *a, const struct window *w)
{
	(void)ctx;
	return sink_n(0, a, w);
}

static int sink1(void *ctx, const struct agg *a, const struct window *w)
{
	(void)ctx;
	return sink_n(1, a, w);
}

static void on_reset(void *ctx)
{
	(void)ctx;
	got.resets++;
}

static void count_one(struct agg *a)
{
	struct stack_tags tags = { .pid = 1, .tid = 1 };
	uint32_t loc = (uint32_t)agg_loc(a, "f", "f.py", 1, LOC_PY);

	agg_add(a, &tags, &loc, 1, 3);
}

static void test_windows(void)
{
	struct world w;

	setup(&w);
	memset(&got, 0, sizeof(got));
	w.l.agg = agg_new();
	w.l.reset = on_reset;
	w.l.win = (struct window){ .start_ns = 1000, .start_unix_ns = 5000 };
	CHECK_EQ_INT(loop_add_sink(&w.l, &(struct window_sink){ .write = sink0 }), 0);
	CHECK_EQ_INT(loop_add_sink(&w.l, &(struct window_sink){ .write = sink1 }), 0);
	count_one(w.l.agg);
	CHECK_EQ_INT(loop_close_window(&w.l, 3000, false), 0);
	CHECK_EQ_INT(got.calls, 2);
	CHECK_EQ_INT(got.order[0], 0);
	CHECK_EQ_INT(got.order[1], 1);
	CHECK_EQ_INT(got.total, 3);             /* the sinks saw the window's counts */
	CHECK_EQ_INT(got.start, 1000);
	CHECK_EQ_INT(got.end, 3000);
	CHECK_EQ_INT(agg_total(w.l.agg), 0);    /* then the next window starts empty */
	CHECK_EQ_INT(got.resets, 1);
	CHECK_EQ_INT(w.l.win.start_ns, 3000);
	CHECK_EQ_INT(w.l.win.start_unix_ns, 7000);
	/* A failing sink: the others still get the window, its error comes back; last: no reset hook. */
	got.fail = -PBP_E_NOMEM;
	count_one(w.l.agg);
	CHECK_EQ_INT(loop_close_window(&w.l, 4000, true), -PBP_E_NOMEM);
	CHECK_EQ_INT(got.calls, 4);
	CHECK_EQ_INT(got.total, 3);
	CHECK_EQ_INT(got.start, 3000);
	CHECK_EQ_INT(got.resets, 1);
	CHECK_EQ_INT(agg_total(w.l.agg), 0);
	for (int i = 2; i < LOOP_SINKS; i++)
		CHECK_EQ_INT(loop_add_sink(&w.l, &(struct window_sink){ .write = sink1 }), 0);
	CHECK_EQ_INT(loop_add_sink(&w.l, &(struct window_sink){ .write = sink1 }), -PBP_E_LIMIT);
	agg_free(w.l.agg);
}

/* keep_locs (the agent's): a window closed mid-run keeps its locations, the last one not. */
static void test_windows_keep_locations(void)
{
	struct world w;

	setup(&w);
	memset(&got, 0, sizeof(got));
	w.l.agg = agg_new();
	w.l.keep_locs = true;
	CHECK_EQ_INT(loop_add_sink(&w.l, &(struct window_sink){ .write = sink1 }), 0);
	count_one(w.l.agg);
	CHECK_EQ_INT(loop_close_window(&w.l, 3000, false), 0);
	CHECK_EQ_INT(got.total, 3);
	CHECK_EQ_INT(agg_total(w.l.agg), 0);
	CHECK_EQ_INT(agg_nlocs(w.l.agg), 1);
	count_one(w.l.agg);
	CHECK_EQ_INT(agg_nlocs(w.l.agg), 1);    /* named again with no new location */
	CHECK_EQ_INT(loop_close_window(&w.l, 4000, true), 0);
	CHECK_EQ_INT(got.total, 3);
	CHECK_EQ_INT(agg_nlocs(w.l.agg), 0);
	agg_free(w.l.agg);
}

static void test_own_ctx(void)
{
	static struct world w, other;

	setup(&w);
	memset(&other, 0, sizeof(other));
	loop_add(&w.l, &(struct timer){ .due = own_due, .fn = own_f, .ctx = &other });
	loop_run(&w.l);
	CHECK_EQ_INT(w.n, 0);                   /* the loop's ctx was given nothing */
	CHECK(count(&other, 'u') >= 1);
	CHECK_EQ_INT(count(&other, 'f'), 1);
}

/*
 * A timer with slack makes no wakeup of its own while another comes within
 * it: 'b' (every 10 ms, 30 ms of slack) runs with 'c' (every 40 ms), and
 * the loop sleeps about as often as 'c' runs, not every 10 ms.
 */
static void test_slack(void)
{
	struct world w;
	uint64_t start;

	setup(&w);
	w.l.longest = 1000 * MS;
	start = loop_now();
	w.ends_after = 1;
	loop_add(&w.l, &(struct timer){ .next = start + 200 * MS, .fn = end_e });
	loop_add(&w.l, &(struct timer){ .period = 10 * MS, .next = start + 10 * MS, .fn = every_b,
					 .slack = 30 * MS });
	loop_add(&w.l, &(struct timer){ .period = 40 * MS, .next = start + 40 * MS, .fn = phase_c });
	loop_run(&w.l);
	CHECK(count(&w, 'c') >= 1);
	CHECK(count(&w, 'b') >= count(&w, 'c'));
	CHECK(w.waits <= (uint64_t)count(&w, 'c') + 2);
}

int main(void)
{
	test_order_and_end();
	test_longest_and_stop();
	test_phase_and_elsewhere();
	test_windows();
	test_windows_keep_locations();
	test_own_ctx();
	test_slack();
	return unit_done("loop");
}
