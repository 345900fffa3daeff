// SPDX-License-Identifier: MIT
/* user/sample/switches.c: a thread's state at a tick instant the loop looks at late. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sample/switches.h"
#include "unit.h"

#define MS 1000000ull
#define T0 (1000 * MS)

/* A switch as the kernel's switch_note makes it: the state after it, at ns. */
static void note(struct pbp_tstate *st, uint64_t ns, bool in, uint8_t reason)
{
	if (!in)
		st->off_reason = reason;
	st->oncpu = in;
	st->recent[st->switches % PBP_SWITCH_RING] = ns << PBP_SWITCH_NS_SHIFT |
		(in ? PBP_SWITCH_ONCPU : 0) | st->off_reason;
	st->switches++;
}

static struct sched_at at(const struct pbp_tstate *st, uint64_t instant)
{
	struct sched_at a;

	sched_state_at(st, instant, &a);
	return a;
}

/* Never switched since it was seen: what /proc said then (seed_state). */
static void test_seeded(void)
{
	struct pbp_tstate st = { .oncpu = 0, .off_reason = PBP_OFF_DISK };
	struct sched_at a = at(&st, T0);

	CHECK(!a.oncpu && !a.oncpu_now && !a.guessed);
	CHECK_EQ_INT(a.off_reason, PBP_OFF_DISK);
	CHECK_EQ_INT(a.after, 0);
}

/*
 * Off CPU at the instant, then in and out again before the look: off. The
 * present state flipped once (the old reading) said on: 4 spinners on 2
 * CPUs read [running] about 50 % each, whatever they had.
 */
static void test_two_switches_after(void)
{
	struct pbp_tstate st = { 0 };
	struct sched_at a;

	note(&st, T0 - 10 * MS, true, 0);
	note(&st, T0 - 5 * MS, false, PBP_OFF_RUNNABLE);
	note(&st, T0 + 1 * MS, true, 0);
	note(&st, T0 + 2 * MS, false, PBP_OFF_SLEEP);
	a = at(&st, T0);
	CHECK(!a.oncpu && !a.oncpu_now && !a.guessed);
	CHECK_EQ_INT(a.off_reason, PBP_OFF_RUNNABLE);       /* why then, not why now */
	CHECK_EQ_INT(a.after, 2);
	CHECK_EQ_INT(a.switches, 4);
	/* On CPU at the instant, out and in since: on. */
	note(&st, T0 + 3 * MS, true, 0);
	a = at(&st, T0 + 2 * MS + MS / 2);
	CHECK(!a.oncpu && a.oncpu_now);
	CHECK_EQ_INT(a.off_reason, PBP_OFF_SLEEP);
	a = at(&st, T0 + MS);       /* a switch at the instant itself is before it */
	CHECK(a.oncpu && a.oncpu_now);
	CHECK_EQ_INT(a.after, 2);
}

/* Every switch recorded after the instant: before the oldest, exact while none was dropped. */
static void test_before_the_oldest(void)
{
	struct pbp_tstate st = { 0 };
	struct sched_at a;

	st.off_reason = PBP_OFF_GIL;    /* seeded, then it got the GIL and a CPU */
	note(&st, T0 + MS, true, 0);
	note(&st, T0 + 2 * MS, false, PBP_OFF_RUNNABLE);
	a = at(&st, T0);
	CHECK(!a.oncpu && !a.guessed);
	CHECK_EQ_INT(a.off_reason, PBP_OFF_GIL);    /* the switch in says where it had been */
	CHECK_EQ_INT(a.after, 2);
	/* More switches since the instant than the record holds: a guess, said so. */
	for (uint64_t k = 0; k < PBP_SWITCH_RING; k++)
		note(&st, T0 + (3 + k) * MS, k % 2 == 0, PBP_OFF_RUNNABLE);
	a = at(&st, T0);
	CHECK(a.guessed);
	CHECK_EQ_INT(a.after, PBP_SWITCH_RING);
	/* The record reaches back to the instant again: no guess. */
	a = at(&st, T0 + (3 + PBP_SWITCH_RING - 1) * MS);
	CHECK(!a.guessed);
	CHECK_EQ_INT(a.after, 0);
}

/*
 * More switches since the instant than the ring keeps, but the kernel saw
 * the tick instant pass at the first of them (tick_cross): exact, not a
 * guess. Four threads on 2 CPUs sleeping 2-6 ms every few hundred us, the
 * loop 10 ms late: 30 % of their states were guesses without it.
 */
static void test_tick_record(void)
{
	struct pbp_tstate st = { 0 };
	struct sched_at a;

	note(&st, T0 - 3 * MS, false, PBP_OFF_RUNNABLE);
	st.tick_ns = T0;                /* what the kernel records at the next switch */
	st.tick_oncpu = 0;
	st.tick_reason = PBP_OFF_RUNNABLE;
	for (uint64_t k = 0; k < 3 * PBP_SWITCH_RING; k++)
		note(&st, T0 + (1 + k) * MS / 4, k % 2 == 0, PBP_OFF_SLEEP);
	a = at(&st, T0);
	CHECK(!a.oncpu && !a.guessed && !a.after_known);
	CHECK_EQ_INT(a.off_reason, PBP_OFF_RUNNABLE);
	/* Another instant than the one recorded: the ring, and a guess past it. */
	a = at(&st, T0 - MS);
	CHECK(a.guessed);
	/* Not switched since the instant: the present state, whatever the record. */
	a = at(&st, T0 + 100 * MS);
	CHECK(a.after == 0 && a.after_known && !a.guessed && a.oncpu == a.oncpu_now);
}

/* A long run of switches: every instant the ring still covers reads the state then. */
static void test_ring_wraps(void)
{
	struct pbp_tstate st = { 0 };
	int wrong = 0;

	for (uint64_t k = 0; k < 100; k++)
		note(&st, T0 + k * MS, k % 2 == 0, k % 4 == 1 ? PBP_OFF_RUNNABLE : PBP_OFF_SLEEP);
	for (uint64_t k = 100 - PBP_SWITCH_RING; k < 100; k++) {
		struct sched_at a = at(&st, T0 + k * MS + MS / 2);

		wrong += a.oncpu != (k % 2 == 0) || a.after != 99 - k || a.guessed ||
			 (!a.oncpu && a.off_reason != (k % 4 == 1 ? PBP_OFF_RUNNABLE : PBP_OFF_SLEEP));
	}
	CHECK_EQ_INT(wrong, 0);
}

int main(void)
{
	test_seeded();
	test_two_switches_after();
	test_before_the_oldest();
	test_ring_wraps();
	test_tick_record();
	return unit_done("switches");
}
