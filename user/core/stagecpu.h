/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_STAGECPU_H
#define PBP_CORE_STAGECPU_H

#include <stdint.h>

/*
 * Where the profiler's own CPU goes, by stage: each thread's CPU clock
 * (CLOCK_THREAD_CPUTIME_ID) read when a stage starts and when it ends, the
 * difference added to the stage. Stages nest: the outer one's clock stops
 * while an inner one runs, so a second is counted once and the stages'
 * sum stays within the process's CPU time. Off until stagecpu_enable():
 * a recording run pays a branch per stage, no clock read.
 */
enum stage {
	STAGE_DISCOVERY,        /* finding processes and threads, opening them, seeing them go */
	STAGE_LABELS,           /* cgroup, command line, service and Kubernetes names */
	STAGE_NAMING,           /* taking samples and process events from the kernel, naming frames */
	STAGE_SLICES,           /* closing a window, merging slices for a profile */
	STAGE_PPROF,            /* encoding pprof's protobuf */
	STAGE_GZIP,
	STAGE_HTTP,             /* serving pulls and /metrics, pushing */
	STAGE_OTHER,            /* the rest of a counted thread: its loop, timers, waiting */
	STAGE__COUNT
};

void stagecpu_enable(void);
/* The calling thread's time from now on belongs to base, outside the stages it enters (once a thread). */
void stagecpu_thread(enum stage base);
void stagecpu_enter(enum stage s);
void stagecpu_leave(void);
/* What the calling thread spent since its last mark, added to its current stage now. */
void stagecpu_flush(void);
/* ns per stage, every thread's, as far as each has been added. */
void stagecpu_read(uint64_t ns[STAGE__COUNT]);
const char *stagecpu_name(enum stage s);

#endif /* PBP_CORE_STAGECPU_H */
