/* SPDX-License-Identifier: MIT */
/*
 * The kernel's counters (the "stats" per-CPU array, enum pbp_stat) summed
 * over the CPUs: read each second by the agent, so in one batch call where
 * the kernel has it (5.6+), else one lookup per counter.
 */
#ifndef PBP_SAMPLE_COUNTERS_H
#define PBP_SAMPLE_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

#include "pybpfprof.h"

struct counters {
	uint64_t *vals;         /* as read: PBP_STAT__COUNT rows of a value per CPU */
	int ncpu;
	bool no_batch;          /* the kernel has no batch lookup: a call per counter */
};

/* fd: the array's; out all zero when nothing could be read. */
void counters_read(struct counters *c, int fd, uint64_t out[PBP_STAT__COUNT]);
/* One counter: a lookup of its row alone (0 when it cannot be read). */
uint64_t counters_one(struct counters *c, int fd, enum pbp_stat which);
void counters_free(struct counters *c);

#endif /* PBP_SAMPLE_COUNTERS_H */
