/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_STATUS_H
#define PBP_AGGREGATE_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a thread was doing at the sample instant: one row each in status.c. */
enum pbp_status {
	ST_RUNNING = 0,         /* on a CPU, holding the GIL (or the GIL is unknown) */
	ST_NATIVE,              /* on a CPU without the GIL: native code */
	ST_RUNNABLE,            /* ready to run, waiting for a CPU */
	ST_GIL_WAIT,            /* blocked waiting for the GIL */
	ST_SLEEPING,            /* interruptible sleep: I/O, sleep, lock */
	ST_DISK,                /* uninterruptible sleep */
	ST_STOPPED,             /* stopped by a signal (SIGSTOP) or a tracer */
	ST_UNKNOWN,
	ST__COUNT,
};

/* Everything the writers show of a status. */
struct status_info {
	const char *label;      /* the leaf frame and the summary's word: "[gil wait]" */
	const char *name;       /* the label without brackets: pprof's "status" label */
	const char *colour;     /* "#rrggbb" in the svg and html flame graphs */
	char mark;              /* one character in `top`'s status bars: 'G' for gil wait */
};

/* The row of a status; out of range is ST_UNKNOWN's. */
const struct status_info *status_info(uint32_t status);
/* "[running]", "[native, no GIL]", ...: status_info(status)->label. */
const char *status_label(uint32_t status);
/* The status whose label this is, or -PBP_E_NOENT. */
int status_by_label(const char *label);
/*
 * A sample's status from the thread's scheduler state (on a CPU, or why it
 * left: enum pbp_off_reason) and the GIL (whether its state is known, and
 * whether this thread holds it).
 */
uint32_t status_classify(bool oncpu, uint8_t off_reason, bool gil_known, bool holds_gil);

#endif /* PBP_AGGREGATE_STATUS_H */
