/* SPDX-License-Identifier: MIT */
/*
 * The collection loop, with no knowledge of what it collects: sleep until
 * the next timer is due (the sampler's events end a sleep early, and every
 * sleep takes in the samples that came meanwhile), run the timers that are
 * due, in table order, again until a timer or a signal ends the run.
 *
 * What the samples add up to is a window's aggregate: when a window
 * closes it goes to each sink in turn, and the next window starts empty.
 * Today one window spans the run and closes at its end; a node agent
 * would close one every so often and push or serve it.
 */
#include <string.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "sample/loop.h"
#include "aggregate/aggregate.h"
#include "core/errors.h"

uint64_t loop_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct timer *loop_add(struct loop *l, const struct timer *t)
{
	if (l->ntimers >= LOOP_TIMERS)
		return NULL;
	l->timers[l->ntimers] = *t;
	return &l->timers[l->ntimers++];
}

int loop_add_sink(struct loop *l, const struct window_sink *s)
{
	if (l->nsinks >= LOOP_SINKS)
		return -PBP_E_LIMIT;
	l->sinks[l->nsinks++] = *s;
	return 0;
}

/* When t is due next (0: not at all): deadlines kept elsewhere are asked for each time. */
static uint64_t next_of(const struct loop *l, const struct timer *t)
{
	return t->due ? t->due(t->ctx ? t->ctx : l->ctx) : t->next;
}

/*
 * The earliest deadline of all, each with its slack, but no later than the
 * longest sleep from now: a timer with slack runs at the first wakeup past
 * its deadline (run_due runs everything due), and makes one only when
 * none came within the slack.
 */
static uint64_t wake_at(const struct loop *l, uint64_t now)
{
	uint64_t at = now + l->longest;

	for (int i = 0; i < l->ntimers; i++) {
		uint64_t n = next_of(l, &l->timers[i]);

		if (n && n + l->timers[i].slack < at)
			at = n + l->timers[i].slack;
	}
	return at;
}

/*
 * Run what is due; false when one ended the run. A timer that did not move
 * its deadline itself runs again a period from now (once: never again).
 */
static bool run_due(struct loop *l, uint64_t now)
{
	for (int i = 0; i < l->ntimers; i++) {
		struct timer *t = &l->timers[i];
		uint64_t n = next_of(l, t);

		if (!n || now < n)
			continue;
		if (!t->fn(t->ctx ? t->ctx : l->ctx, t, now))
			return false;
		if (!t->due && t->next == n)
			t->next = t->period ? now + t->period : 0;
	}
	return true;
}

void loop_run(struct loop *l)
{
	while (!*l->stop) {
		uint64_t now = loop_now(), at = wake_at(l, now);

		l->wait(l->ctx, at > now ? at - now : 0);
		if (!run_due(l, loop_now()))
			break;
	}
}

int loop_close_window(struct loop *l, uint64_t end_ns, bool last)
{
	struct window w = l->win;
	int err = 0;

	w.end_ns = end_ns;
	for (int i = 0; i < l->nsinks; i++) {
		const struct window_sink *k = &l->sinks[i];
		int e = k->take ? k->take(k->ctx, l->agg, &w) : k->write(k->ctx, l->agg, &w);

		if (e && !err)
			err = e;        /* the first failure is the one reported; the others still get it */
	}
	if (l->keep_locs && !last)
		agg_reset_stacks(l->agg);
	else
		agg_reset(l->agg);
	l->win.start_unix_ns += end_ns - l->win.start_ns;
	l->win.start_ns = end_ns;
	if (!last && l->reset)
		l->reset(l->ctx);
	return err;
}
