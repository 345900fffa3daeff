/* SPDX-License-Identifier: MIT */
/*
 * --subprocesses' process events (user/sample/heldevents.c): an exec or an
 * exit waits until the samples before it are read, in the order they came;
 * a fork passes at once unless it is about a pid with an event held, and a
 * full queue gives what it holds before the next.
 */
#include <stdint.h>

#include "unit.h"
#include "sample/heldevents.h"

static uint32_t given[HELD_EVENTS_MAX + 8];
static unsigned ngiven;

static void give(void *ctx, const struct pbp_proc_event *ev)
{
	(void)ctx;
	given[ngiven++] = ev->kind << 24 | ev->pid;
}

static struct pbp_proc_event event(uint32_t kind, uint32_t pid)
{
	struct pbp_proc_event ev = { .kind = kind, .pid = pid };

	return ev;
}

int main(void)
{
	static struct held_events h;
	struct pbp_proc_event ev;

	ev = event(PBP_EV_EXEC, 10);
	CHECK(held_events_hold(&h, &ev));
	ev = event(PBP_EV_EXIT, 11);
	CHECK(held_events_hold(&h, &ev));
	ev = event(PBP_EV_FORK, 12);
	CHECK(!held_events_hold(&h, &ev));
	CHECK(!held_events_block(&h, &ev));     /* a new child: given at once */
	ev = event(PBP_EV_FORK, 11);
	CHECK(held_events_block(&h, &ev));      /* pid 11 reused: its exit first */
	held_events_release(&h, give, NULL);
	CHECK_EQ_INT(ngiven, 2);
	CHECK_EQ_INT(given[0], (uint32_t)PBP_EV_EXEC << 24 | 10);
	CHECK_EQ_INT(given[1], (uint32_t)PBP_EV_EXIT << 24 | 11);
	CHECK_EQ_INT(h.n, 0);

	ngiven = 0;
	for (uint32_t pid = 1; pid <= HELD_EVENTS_MAX; pid++) {
		ev = event(PBP_EV_EXIT, pid);
		CHECK(held_events_hold(&h, &ev));
	}
	ev = event(PBP_EV_EXEC, 9999);
	CHECK(!held_events_hold(&h, &ev));      /* no room: given after those held */
	CHECK(held_events_block(&h, &ev));
	held_events_release(&h, give, NULL);
	CHECK_EQ_INT(ngiven, HELD_EVENTS_MAX);
	CHECK_EQ_INT(given[HELD_EVENTS_MAX - 1], (uint32_t)PBP_EV_EXIT << 24 | HELD_EVENTS_MAX);
	return unit_done("heldevents");
}
