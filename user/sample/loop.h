/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_LOOP_H
#define PBP_SAMPLE_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>

struct agg;

#define LOOP_TIMERS 12       /* a recording run uses up to 7, the agent 3 more */
#define LOOP_SINKS 4
#define TIMER_NOW 1             /* a timer's next: due at the loop's next look */

/* Something the loop does at a time: a rate (ticks, jitter), a safety net, the run's end. */
struct timer {
	uint64_t period;        /* ns from one run to the next; 0: once */
	uint64_t next;          /* monotonic ns when it is due; 0: off */
	/* Deadlines kept elsewhere (per target, per process): the earliest, 0 if none. NULL: next. */
	uint64_t (*due)(void *ctx);
	/* Do it; false ends the run. It may move t->next itself, to keep its phase. */
	bool (*fn)(void *ctx, struct timer *t, uint64_t now);
	/* What due and fn are given: the timer's own (a command's above the session), NULL: the loop's. */
	void *ctx;
	/*
	 * How late it may run (ns; 0: on time): a timer that need not be
	 * exact waits up to this for a wakeup something else makes, and runs
	 * with it, instead of making its own.
	 */
	uint64_t slack;
};

/* The span of time one aggregate covers. */
struct window {
	uint64_t start_ns, end_ns;      /* monotonic */
	uint64_t start_unix_ns;         /* the wall clock at start_ns */
};

/*
 * Where a closed window's aggregate goes: the profile file and the summary
 * at exit today; a node agent's push or serve later. 0 or -PBP_E_*.
 */
struct window_sink {
	int (*write)(void *ctx, const struct agg *a, const struct window *w);
	void *ctx;
	/*
	 * Instead of write: a sink that keeps what the window counted (the
	 * agent's history) takes it with agg_take, no copy. The last sink.
	 */
	int (*take)(void *ctx, struct agg *a, const struct window *w);
};

struct loop {
	struct timer timers[LOOP_TIMERS];       /* due at once: run in this order */
	int ntimers;
	struct window_sink sinks[LOOP_SINKS];
	int nsinks;
	uint64_t longest;       /* ns: the longest sleep, samples waiting meanwhile */
	/* Sleep up to ns (0: not at all; events end it early), taking in what arrived. */
	void (*wait)(void *ctx, uint64_t ns);
	/* After a window closed, agg_reset: forget what pointed into the old aggregate. */
	void (*reset)(void *ctx);
	/* Between windows the locations stay (agg_reset_stacks): each is named once, not each window. */
	bool keep_locs;
	void *ctx;
	struct agg *agg;
	struct window win;      /* the open one (end_ns unused) */
	const volatile sig_atomic_t *stop;      /* a signal's flag: ends the run */
};

uint64_t loop_now(void);        /* CLOCK_MONOTONIC, ns */
/* A copy of t in the table, NULL when it is full (LOOP_TIMERS). */
struct timer *loop_add(struct loop *l, const struct timer *t);
int loop_add_sink(struct loop *l, const struct window_sink *s);       /* -PBP_E_LIMIT when full */
/* Until a timer says stop or *stop is set. */
void loop_run(struct loop *l);
/*
 * The window ends at end_ns: each sink gets the aggregate (all of them, even
 * after one failed: the first error is returned), then it is reset and the
 * next window starts; last: the run ends, no reset hook.
 */
int loop_close_window(struct loop *l, uint64_t end_ns, bool last);

#endif /* PBP_SAMPLE_LOOP_H */
