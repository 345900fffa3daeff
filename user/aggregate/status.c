/* SPDX-License-Identifier: MIT */
/*
 * Thread statuses: what a thread was doing at a sample instant. Each status
 * is one row of the table below, which every writer reads: the leaf frame
 * --status adds, the summary's per-thread shares, pprof's "status" label,
 * and the colours of the svg and html flame graphs (html.c puts them in the
 * page's data). Beside the table, the one function that decides a sample's
 * status from what the kernel and the GIL say.
 *
 * Adding a status: a value in enum pbp_status (status.h), its row
 * here, in enum order, and the case in status_classify that yields it.
 */
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "pybpfprof.h"
#include "aggregate/status.h"
#include "core/errors.h"

/*
 * In enum order, without designated initializers: a missing row makes the
 * table short and the assertion below fails the build (with "[ST_X] ="
 * a forgotten row in the middle would be a silent hole of NULLs).
 */
static const struct status_info rows[] = {
	/* ST_RUNNING */  { "[running]", "running", "#3aa655", 'R' },
	/* ST_NATIVE */   { "[native, no GIL]", "native, no GIL", "#4b72d9", 'N' },
	/* ST_RUNNABLE */ { "[runnable]", "runnable", "#f0c419", 'r' },
	/* ST_GIL_WAIT */ { "[gil wait]", "gil wait", "#e0393e", 'G' },
	/* ST_SLEEPING */ { "[sleeping]", "sleeping", "#a9a9b6", 'S' },
	/* ST_DISK */     { "[disk]", "disk", "#f07f26", 'D' },
	/* ST_STOPPED */  { "[stopped]", "stopped", "#7a5230", 'T' },
	/* ST_UNKNOWN */  { "[unknown]", "unknown", "#cdb8f0", '?' },
};

_Static_assert(sizeof(rows) / sizeof(rows[0]) == ST__COUNT,
	       "user/aggregate/status.c: one row per enum pbp_status value, in enum order");

const struct status_info *status_info(uint32_t status)
{
	return &rows[status < ST__COUNT ? status : ST_UNKNOWN];
}

const char *status_label(uint32_t status)
{
	return status_info(status)->label;
}

int status_by_label(const char *label)
{
	for (uint32_t s = 0; s < ST__COUNT; s++)
		if (strcmp(label, rows[s].label) == 0)
			return (int)s;
	return -PBP_E_NOENT;
}

static uint32_t off_cpu_status(uint8_t reason)
{
	switch (reason) {
	case PBP_OFF_RUNNABLE: return ST_RUNNABLE;
	case PBP_OFF_DISK: return ST_DISK;
	case PBP_OFF_GIL: return ST_GIL_WAIT;
	case PBP_OFF_STOPPED: return ST_STOPPED;
	default: return ST_SLEEPING;
	}
}

uint32_t status_classify(bool oncpu, uint8_t off_reason, bool gil_known, bool holds_gil)
{
	if (oncpu)      /* an unknown GIL counts as held: the thread runs Python */
		return !gil_known || holds_gil ? ST_RUNNING : ST_NATIVE;
	if (off_reason == PBP_OFF_GIL && holds_gil)
		return ST_RUNNABLE;     /* preempted in a futex call after taking it */
	return off_cpu_status(off_reason);
}
