/* SPDX-License-Identifier: MIT */
/*
 * The timers of a run's loop: its end (-d, every target gone), the ticks
 * of wall and gil modes, processes looked at again, thread lists read
 * again, the sampling period re-drawn, and the live line on a terminal.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "core/clock.h"
#include "core/stagecpu.h"
#include "sample/loop.h"
#include "sample/sampler.h"
#include "sample/target.h"
#include "session/run.h"

/* Notice targets that exited (the kernel says so too, but a zombie is not reaped at once). */
static int any_alive(struct session *r, bool look)
{
	uint64_t now = mono_ns();

	launch_reap(r, WNOHANG);
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];
		bool up = t->pid == r->child ? r->child != 0 :
			  !look || (r->o.all ? pid_exists(t->pid) : pid_alive(t->pid));

		if (t->p && (!t->alive || !up)) {
			if (r->o.follow) {
				if (t->alive)
					sampler_del_proc(r->c.smp, t->pid), t->alive = false;
				follow_drop_gone(r, t, now);    /* a tree's processes come and go */
			} else if (r->o.all) {
				run_drop_target(r, t);   /* a host has many: free them as they go */
				r->trim_due = true;
				run_give_place(r);
			}
			else if (t->alive)
				sampler_del_proc(r->c.smp, t->pid), t->alive = false;
		}
	}
	/* A target that exec'd counts while its new program is looked at. */
	return run_live_targets(r) + (r->o.all ? 0 : r->npending);
}

/*
 * The live line is rewritten in place: erased with ESC [ K where the
 * terminal knows it, else (TERM unset, empty or "dumb": Emacs shells, some
 * CI logs) overwritten with spaces, no escape sequence at all.
 */
#define LIVE_WIDTH 72

static bool term_erases(void)
{
	const char *t = getenv("TERM");

	return t && t[0] && strcmp(t, "dumb") != 0;
}

void live_clear(void)
{
	if (term_erases())
		fputs("\r\033[K", stderr);
	else
		fprintf(stderr, "\r%*s\r", LIVE_WIDTH, "");
}

static void live_line(struct session *r, uint64_t now)
{
	uint64_t st[PBP_STAT__COUNT];
	double secs = (double)(now - r->start_ns) / 1e9;
	uint64_t n = agg_total(r->c.agg);
	char line[160];

	sampler_stats(r->c.smp, st);
	snprintf(line, sizeof(line), "pybpfprof: %.0f s, %llu samples, %.0f/s, %llu lost", secs,
		 (unsigned long long)n, secs > 0 ? (double)n / secs : 0.0,
		 (unsigned long long)st[PBP_STAT_LOST]);
	if (term_erases())
		fprintf(stderr, "\r\033[K%s", line);
	else
		fprintf(stderr, "\r%-*s", LIVE_WIDTH, line);
}

/* ------------------------------------------------------------- timers */

/* The run's -d: over. */
static bool duration_over(void *ctx, struct timer *t, uint64_t now)
{
	(void)ctx, (void)t, (void)now;
	return false;
}

/* wall and gil modes: ticks at hz on the monotonic clock, caught up if the loop fell behind. */
static bool run_ticks(void *ctx, struct timer *t, uint64_t now)
{
	struct session *r = ctx;
	int done = 0;

	while (t->next <= now) {
		if (done++ < MAX_CATCH_UP) {
			for (int i = 0; i < r->ntargets; i++) {
				uint64_t before = agg_total(r->c.agg);

				target_tick(&r->c, &r->targets[i], t->next);
				if (r->o.follow)
					follow_counted(r, r->targets[i].pid, agg_total(r->c.agg) - before);
			}
			r->c.ticks++;
		} else {
			r->c.late_ticks++;
		}
		t->next += t->period;
	}
	return true;
}

/*
 * What the processes that went held (page and code caches, thread tables),
 * and what finding processes took for a moment (their ELF files read), is
 * in the middle of the heap, which malloc never gives back by itself: an
 * agent's memory would stay at its highest for good. At most once an
 * ALIVE_EVERY_NS, on a node where processes end several times a second.
 */
static void trim_heap(struct session *r, uint64_t now)
{
	if (!r->trim_due || now < r->next_trim)
		return;
	r->trim_due = false;
	r->next_trim = now + ALIVE_EVERY_NS;
	malloc_trim(0);
}

/* Between two looks at every target's life: -a's is the agent's --rescan, a minute by default. */
static uint64_t alive_look_ns(const struct session *r)
{
	if (!r->o.all)
		return ALIVE_EVERY_NS;
	return r->o.rescan_ns ? r->o.rescan_ns : ALIVE_HOST_EVERY_NS;
}

/*
 * Every ALIVE_EVERY_NS, and at once after an exit event: the run ends with
 * its targets. With -a an exit event drops the target it names; /proc is
 * looked at for all only every ALIVE_EVERY_NS (a host's processes exit
 * several times a second, and it has hundreds).
 */
static bool check_alive(void *ctx, struct timer *t, uint64_t now)
{
	struct session *r = ctx;
	bool look = !r->o.all || now >= r->next_alive_look, go;

	(void)t;
	stagecpu_enter(STAGE_DISCOVERY);
	if (look)
		r->next_alive_look = now + alive_look_ns(r);
	if (r->o.follow) {
		any_alive(r, look);
		go = follow_roots_alive(r) && !r->launch_err;
	} else {
		go = any_alive(r, look) || r->o.all;
		if (go)
			trim_heap(r, now);
	}
	stagecpu_leave();
	return go;
}

/* --subprocesses: a command that is not Python and started nothing is given up on. */
static bool launch_deadline(void *ctx, struct timer *t, uint64_t now)
{
	(void)t, (void)now;
	return !launch_given_up(ctx);
}

static uint64_t earlier(uint64_t a, uint64_t b)
{
	return b && (!a || b < a) ? b : a;
}

static uint64_t pending_due(void *ctx)
{
	const struct session *r = ctx;
	uint64_t due = 0;

	for (int i = 0; i < r->npending; i++)
		due = earlier(due, r->pending[i].next_ns);
	return due;
}

/* -a in cpu mode: twice each --rescan of the agent's, as RESCAN_HOST_EVERY_NS is to the minute. */
static uint64_t names_every_ns(const struct session *r)
{
	if (!r->c.o.names_late)
		return RESCAN_EVERY_NS;
	return r->o.rescan_ns ? r->o.rescan_ns / 2 : RESCAN_HOST_EVERY_NS;
}

/*
 * A target's thread list is read when it started a thread, and every
 * RESCAN_EVERY_NS for those sampled since the last: what a read would find
 * in an idle one (names set, threads ended) shows in no profile until it is
 * sampled, and a node's hundreds of idle processes read nothing.
 */
static bool rescan_due(void *ctx, struct timer *t, uint64_t now)
{
	struct session *r = ctx;
	bool all = now >= r->next_rescan;

	(void)t;
	stagecpu_enter(STAGE_DISCOVERY);
	for (int i = 0; i < r->ntargets; i++) {
		struct target *tg = &r->targets[i];
		bool due = all && tg->counted != tg->counted_rescan;

		if (!tg->alive)
			continue;
		if (tg->rescan_soon && now >= tg->rescan_soon) {
			tg->rescan_soon = 0;
			due = true;
		}
		if (tg->rescan_later && now >= tg->rescan_later) {
			tg->rescan_later = 0;
			due = due || !target_spare_late_read(&r->c, tg);
		}
		if (due)
			target_rescan(&r->c, tg, false);
	}
	if (all)
		r->next_rescan = now + names_every_ns(r);
	stagecpu_leave();
	return true;
}

static uint64_t rescans_due(void *ctx)
{
	const struct session *r = ctx;
	uint64_t due = r->next_rescan;

	for (int i = 0; i < r->ntargets; i++) {
		if (!r->targets[i].alive)
			continue;       /* rescan_due skips it: its deadline would wake the loop at once, forever */
		due = earlier(due, r->targets[i].rescan_soon);
		due = earlier(due, r->targets[i].rescan_later);
	}
	return due;
}

static bool jitter(void *ctx, struct timer *t, uint64_t now)
{
	struct session *r = ctx;

	(void)t, (void)now;
	sampler_jitter(r->c.smp);
	return true;
}

static uint64_t jitter_every(unsigned hz)
{
	uint64_t n = JITTER_PERIODS * (1000000000ull / hz);

	return n > JITTER_MIN_NS ? n : JITTER_MIN_NS;
}

/* Once a second on a terminal, on the second since the start. */
static bool live_tick(void *ctx, struct timer *t, uint64_t now)
{
	live_line(ctx, now);
	t->next += t->period;
	return true;
}

/* Samples wait in the ring buffer: a few per CPU, within [BATCH_NS, BATCH_MAX_NS]. */
static uint64_t batch_ns(unsigned hz)
{
	uint64_t batch = BATCH_SAMPLES * (1000000000ull / hz);

	return batch < BATCH_NS ? BATCH_NS : batch > BATCH_MAX_NS ? BATCH_MAX_NS : batch;
}

static void wait_samples(void *ctx, uint64_t ns)
{
	struct session *r = ctx;

	/* a sleep costs no CPU: what this takes is the batch's samples, taken in and named */
	stagecpu_enter(STAGE_NAMING);
	if (ns)
		sampler_wait(r->c.smp, ns);
	else
		sampler_drain(r->c.smp);
	stagecpu_leave();
}

/*
 * The timers, in the order they run when due at once: the end of -d
 * first, then ticks (their instants are past), then the rest.
 */
void run_add_timers(struct session *r, bool tty)
{
	uint64_t start = r->start_ns, tick = 1000000000ull / r->c.o.hz, look = alive_look_ns(r);
	struct loop *l = &r->loop;

	r->next_rescan = r->start_ns + RESCAN_EVERY_NS;
	l->longest = batch_ns(r->c.o.hz);
	l->wait = wait_samples;
	l->ctx = r;

	if (r->o.duration > 0)
		loop_add(l, &(struct timer){ .next = start + (uint64_t)(r->o.duration * 1e9),
					     .fn = duration_over });
	if (r->c.o.mode != MODE_CPU) {
		/* The kernel keeps each thread's state at these instants, however late they are looked at. */
		sampler_set_ticks(r->c.smp, start + tick, tick);
		loop_add(l, &(struct timer){ .period = tick, .next = start + tick, .fn = run_ticks });
	}
	/* a --rescan shorter than the timer's period is kept by coming as often */
	r->alive_timer = loop_add(l, &(struct timer){ .period = look < ALIVE_EVERY_NS ? look : ALIVE_EVERY_NS,
						      .next = TIMER_NOW, .fn = check_alive, .slack = LAX_NS });
	if (r->o.follow && r->o.cmd)
		loop_add(l, &(struct timer){ .next = start + LAUNCH_WAIT_NS, .fn = launch_deadline });
	loop_add(l, &(struct timer){ .due = pending_due, .fn = run_pending });
	loop_add(l, &(struct timer){ .due = rescans_due, .fn = rescan_due });
	loop_add(l, &(struct timer){ .period = jitter_every(r->c.o.hz),
				     .next = start + jitter_every(r->c.o.hz), .fn = jitter, .slack = LAX_NS });
	if (tty)
		loop_add(l, &(struct timer){ .period = 1000000000ull, .next = start + 1000000000ull,
					     .fn = live_tick });
}

