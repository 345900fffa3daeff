/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_PROFILES_H
#define PBP_AGENT_PROFILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/history.h"

/* Which processes a profile holds: all, one service, one pid (both may be set). */
struct profile_filter {
	const char *service;    /* NULL: any */
	pid_t pid;              /* 0: any */
};

/* What the profile says it is (mode, frequency) and whether it goes to a profile store. */
struct profile_kind {
	const char *mode;
	unsigned hz;
	bool series_labels;
};

/*
 * The gzipped pprof of the slices that end in (since, until] (wall-clock
 * ns) whose processes pass f: *body malloc'ed, *got the span it covers
 * (0, 0 and an empty profile when no slice is there). 0 or -PBP_E_NOMEM.
 */
int profile_build(struct history *h, uint64_t since, uint64_t until, const struct profile_filter *f,
		  const struct profile_kind *k, char **body, size_t *len, struct span *got);

#endif /* PBP_AGENT_PROFILES_H */
