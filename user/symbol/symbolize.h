/* SPDX-License-Identifier: MIT */
#ifndef PBP_SYMBOL_SYMBOLIZE_H
#define PBP_SYMBOL_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pybpfprof.h"

struct agg;
struct pyproc;

struct symstats {
	uint64_t samples;
	uint64_t completed;     /* stack finished in user space from where the kernel stopped */
	uint64_t failed;        /* finishing it failed: the stack is what the kernel saw */
	uint64_t frames;
	uint64_t unknown_frames;/* code object freed or unreadable by the time it was named */
	uint64_t no_python;     /* the thread was in no Python frame */
	uint64_t elided;        /* deeper than PBP_MAX_DEPTH: frames left out in the middle */
	uint64_t short_of_root; /* a walk stopped at a frame it could not read: under SHORT_OF_ROOT */
	uint64_t reused;        /* samples whose stack was named as before, not again (stackmemo) */
};

/* The root of a stack whose outer frames could not be read (freed, unmapped). */
#define SHORT_OF_ROOT "[outer frames unreadable]"

/* Locations of one sample, root first, into locs (at most max). */
int symbolize(struct pyproc *p, const struct pbp_sample *s, struct agg *a, uint32_t *locs,
	      uint32_t max, uint32_t *n, struct symstats *st);
/*
 * One process's stacks named lately, by what the kernel gave of them (each
 * frame's code address, instruction and key): a stack the kernel gives
 * again is not named again. NULL until its first sample: an idle process
 * holds none.
 */
struct stackmemo;
/* symbolize(), through *m (made at need): the same locations, counted the same way. */
int symbolize_memo(struct stackmemo **m, struct pyproc *p, const struct pbp_sample *s, struct agg *a,
		   uint32_t *locs, uint32_t max, uint32_t *n, struct symstats *st);
void stackmemo_free(struct stackmemo *m);
/* Locations of a thread's stack read now from its thread state, root first. */
int symbolize_thread(struct pyproc *p, uint64_t tstate, struct agg *a, uint32_t *locs,
		     uint32_t max, uint32_t *n, struct symstats *st);

#endif /* PBP_SYMBOL_SYMBOLIZE_H */
