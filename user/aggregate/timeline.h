/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_TIMELINE_H
#define PBP_AGGREGATE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * When each sample was taken: the aggregate's stack it was counted into and
 * its monotonic time, in the order counted. Only a recording that writes a
 * format with a timeline keeps one (the Gecko profile); at most max samples,
 * 12 bytes each: past that, or when memory runs out, it is full, and holds
 * only the start of the run.
 */
struct timeline {
	uint32_t *stack;
	uint64_t *ns;
	size_t n, cap, max;
	bool full;              /* a sample could not be kept */
};

#define TIMELINE_MAX ((size_t)4 << 20)  /* 48 MiB: over 5 hours of 20 threads at 99 Hz */

void timeline_init(struct timeline *t, size_t max);
/* Stack id (agg_last, agg_bump's) at ns; a negative id (not counted) is left out. */
void timeline_add(struct timeline *t, int64_t stack, uint64_t ns);
/* Empty again, for a new window: stack ids are the aggregate's, which was reset. */
void timeline_reset(struct timeline *t);
void timeline_free(struct timeline *t);

#endif /* PBP_AGGREGATE_TIMELINE_H */
