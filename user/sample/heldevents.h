/* SPDX-License-Identifier: MIT */
/*
 * Process events held back until the samples taken before them are read.
 * --subprocesses reads the events ring before the samples ring, so that a
 * new child's first samples find it known; but an exec or an exit read so
 * would drop its process before its last samples, still in the other ring,
 * were named. Those two wait here until the samples ring has been emptied;
 * any other event passes, unless it is about a pid with an event held.
 */
#ifndef PBP_SAMPLE_HELDEVENTS_H
#define PBP_SAMPLE_HELDEVENTS_H

#include <stdbool.h>

#include "pybpfprof.h"

#define HELD_EVENTS_MAX 256

struct held_events {
	struct pbp_proc_event ev[HELD_EVENTS_MAX];
	unsigned n;
};

typedef void (*held_event_fn)(void *ctx, const struct pbp_proc_event *ev);

/* true: ev is kept to be given later (an exec or an exit, and room for it). */
bool held_events_hold(struct held_events *h, const struct pbp_proc_event *ev);
/* true: the held events must be given before ev (it is about one of their pids, or none fits). */
bool held_events_block(const struct held_events *h, const struct pbp_proc_event *ev);
/* Gives each held event to fn in the order they came, and forgets them. */
void held_events_release(struct held_events *h, held_event_fn fn, void *ctx);

#endif /* PBP_SAMPLE_HELDEVENTS_H */
