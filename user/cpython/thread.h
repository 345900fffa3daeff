/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_THREAD_H
#define PBP_CPYTHON_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pyproc;

struct pythread {
	uint64_t tstate;
	uint64_t interp;
	int64_t interp_id;
	pid_t tid;              /* kernel tid, 0 if it could not be found */
	pid_t ns_tid;           /* its id in the target's own PID namespace, 0 when that is ours */
	uint64_t frame;         /* innermost frame address, 0 if idle */
	uint64_t ident;         /* tstate->thread_id: pthread_t, threading.get_ident() */
};

/* A Python-level thread name: threading.Thread.name of the thread ident. */
struct pythread_name {
	uint64_t ident;         /* threading.get_ident(), as in struct pythread */
	char name[64];          /* UTF-8, NUL-terminated, truncated */
	uint64_t thread;        /* the threading.Thread it was read from */
};

#define PBP_MAX_THREADS 8192
#define PBP_MAX_INTERPS 256

/*
 * Walk every interpreter's thread list. *n threads written, at most max.
 * Threads exit while it runs: a walk that faults part way is tried again,
 * and if it keeps faulting gives the threads read before the fault (and 0);
 * a list that stays corrupt (a cycle, too long) is -PBP_E_CORRUPT.
 * A tid or ident that two thread states claim (a thread being started
 * carries its starter's until it writes its own) goes to the oldest; the
 * others get 0, unknown.
 */
int pythreads_read(struct pyproc *p, struct pythread *out, size_t max, size_t *n);
/* Innermost frame of one thread state, read now. */
int pythread_frame(struct pyproc *p, uint64_t tstate, uint64_t *frame);
/* The thread tid (our PID namespace's id) has not ended. */
bool pythread_alive(const struct pyproc *p, pid_t tid);

struct gilstate {
	bool known, locked;
	bool uncreated;         /* not made yet (3.6, one thread): its one Python thread runs freely */
	uint64_t holder;        /* tstate that last took the GIL */
	uint64_t addr;          /* address of the struct _gil_runtime_state */
};
/* The GIL of the interpreter at interp (ignored on <= 3.11: one GIL). */
int pygil_read(struct pyproc *p, uint64_t interp, struct gilstate *g);
/* Whether the thread of tstate holds the GIL g describes; running: on a CPU or preempted (an uncreated GIL, 3.6: held while its one thread runs). */
bool pygil_holds(const struct gilstate *g, uint64_t tstate, bool running);
/* The same, knowing where the GIL struct is (it does not move). */
int pygil_state(struct pyproc *p, uint64_t addr, struct gilstate *g);

#endif /* PBP_CPYTHON_THREAD_H */
