/* SPDX-License-Identifier: MIT */
#include "sample/heldevents.h"

bool held_events_hold(struct held_events *h, const struct pbp_proc_event *ev)
{
	if ((ev->kind != PBP_EV_EXEC && ev->kind != PBP_EV_EXIT) || h->n >= HELD_EVENTS_MAX)
		return false;
	h->ev[h->n++] = *ev;
	return true;
}

bool held_events_block(const struct held_events *h, const struct pbp_proc_event *ev)
{
	if (h->n >= HELD_EVENTS_MAX)
		return true;
	for (unsigned i = 0; i < h->n; i++)
		if (h->ev[i].pid == ev->pid)
			return true;
	return false;
}

void held_events_release(struct held_events *h, held_event_fn fn, void *ctx)
{
	/* fn may hold more (a nested read of the ring): those wait for the next release */
	unsigned n = h->n;
	struct pbp_proc_event ev;

	for (unsigned i = 0; i < n; i++) {
		ev = h->ev[i];
		fn(ctx, &ev);
	}
	for (unsigned i = n; i < h->n; i++)
		h->ev[i - n] = h->ev[i];
	h->n -= n;
}
