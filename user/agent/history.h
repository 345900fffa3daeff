/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_HISTORY_H
#define PBP_AGENT_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate/merge.h"

/*
 * The agent's recent past: one aggregate per closed slice of the run (a
 * second), oldest first, for as long as keep_ns and within max_bytes. The
 * sampling loop adds, the HTTP server's thread reads: every call locks.
 */
struct history;

struct history *history_new(uint64_t keep_ns, size_t max_bytes);
void history_free(struct history *h);
/* A copy of a, the slice [start, end) in wall-clock ns: 0 or -PBP_E_NOMEM. */
int history_add(struct history *h, const struct agg *a, uint64_t start_ns, uint64_t end_ns);
/* What a counted, taken over (agg_take: O(1), a left empty of it): 0 or -PBP_E_NOMEM (a untouched). */
int history_take(struct history *h, struct agg *a, uint64_t start_ns, uint64_t end_ns);

/* What a merge covered: the slices' span, 0 and 0 when none. */
struct span {
	uint64_t start_ns, end_ns;
};
/* Merge the slices that end in (since, until] into dst (keep as agg_merge takes it). */
int history_merge(struct history *h, struct agg *dst, uint64_t since, uint64_t until, agg_keep_fn keep,
		  void *ctx, struct span *got);
/* Each service with samples in the slices ending in (since, until], once: fn(name, ctx). */
int history_services(struct history *h, uint64_t since, uint64_t until,
		     int (*fn)(const char *service, void *ctx), void *ctx);

struct history_stats {
	size_t bytes;
	uint32_t slices;
	uint64_t dropped;       /* slices dropped early for the memory budget */
};
void history_stats(struct history *h, struct history_stats *st);

#endif /* PBP_AGENT_HISTORY_H */
