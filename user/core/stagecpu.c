/* SPDX-License-Identifier: MIT */
/*
 * Per-stage CPU counters. Each thread keeps its own stack of stages and the
 * clock value of its last mark; totals are shared, added atomically. A
 * thread's CPU clock is read at a stage's start and end only (never per
 * sample): a node agent names samples in batches, a batch is one stage run.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "core/stagecpu.h"

#define DEPTH 8         /* deeper nesting is counted to its 8th level */

static atomic_bool enabled;
static _Atomic uint64_t total[STAGE__COUNT];

static _Thread_local enum stage stack[DEPTH];
static _Thread_local int depth;
static _Thread_local uint64_t mark;

static const char *const names[STAGE__COUNT] = {
	[STAGE_DISCOVERY] = "discovery", [STAGE_LABELS] = "labels", [STAGE_NAMING] = "naming",
	[STAGE_SLICES] = "slices", [STAGE_PPROF] = "pprof", [STAGE_GZIP] = "gzip", [STAGE_HTTP] = "http",
	[STAGE_OTHER] = "other",
};
_Static_assert(sizeof(names) / sizeof(names[0]) == STAGE__COUNT, "a stage without a name");

static uint64_t thread_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return mark;    /* cannot happen for the calling thread; then nothing is added */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The time since the mark to the stage on top, the mark moved to now. */
static void charge(uint64_t now)
{
	int top = depth < DEPTH ? depth : DEPTH;

	if (top > 0 && now > mark)
		atomic_fetch_add_explicit(&total[stack[top - 1]], now - mark, memory_order_relaxed);
	mark = now;
}

void stagecpu_enable(void)
{
	atomic_store(&enabled, true);
}

void stagecpu_thread(enum stage base)
{
	if (!atomic_load_explicit(&enabled, memory_order_relaxed) || depth > 0)
		return;         /* said once per thread: later calls would drop what the mark holds */
	stack[0] = base;
	depth = 1;
	mark = thread_ns();
}

void stagecpu_enter(enum stage s)
{
	if (!atomic_load_explicit(&enabled, memory_order_relaxed))
		return;
	charge(thread_ns());
	if (depth < DEPTH)
		stack[depth] = s;
	depth++;
}

void stagecpu_leave(void)
{
	if (!atomic_load_explicit(&enabled, memory_order_relaxed) || depth <= 0)
		return;
	charge(thread_ns());
	depth--;
}

void stagecpu_flush(void)
{
	if (atomic_load_explicit(&enabled, memory_order_relaxed) && depth > 0)
		charge(thread_ns());
}

void stagecpu_read(uint64_t ns[STAGE__COUNT])
{
	for (int i = 0; i < STAGE__COUNT; i++)
		ns[i] = atomic_load_explicit(&total[i], memory_order_relaxed);
}

const char *stagecpu_name(enum stage s)
{
	return s < STAGE__COUNT ? names[s] : "?";
}
