/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_AGGREGATE_H
#define PBP_AGGREGATE_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate/rootlabel.h"

enum loc_kind {
	LOC_PY = 0,             /* a Python frame: name (file:line) */
	LOC_THREAD,             /* root label: thread TID name */
	LOC_PROCESS,            /* root label: process PID cmdline */
	LOC_STATUS,             /* leaf label: [running], [gil wait], ... */
};

/* Per-sample facts kept beside each stack; identical stacks with equal tags share a count. */
struct stack_tags {
	uint32_t pid, tid;
	uint32_t status;        /* enum pbp_status */
	uint32_t pad;
};

struct agg;
struct agg *agg_new(void);
void agg_free(struct agg *a);
void agg_reset(struct agg *a);
/*
 * Empty of stacks, threads and processes, as agg_reset, but the strings and
 * locations are kept with their ids, up to AGG_KEEP_LOCS (past it, or with
 * native locations, it is agg_reset). A location no stack uses is never
 * written out by a merge; a writer of a's own locations must agg_reset.
 */
#define AGG_KEEP_LOCS 4096         /* a merge maps each of them: keep that small */
void agg_reset_stacks(struct agg *a);
/*
 * What a counted (stacks, threads, processes), taken into a new aggregate
 * in O(1) for the agent's history; a is left empty of it, its locations
 * kept. They are shared, by reference: a goes on adding to them, the new
 * one reads the ids it had, and adds none (agg_loc fails on it: merge it
 * into another to count more). It may be read on another thread once
 * handed there under a lock. NULL when out of memory (a untouched).
 */
struct agg *agg_take(struct agg *a);
/*
 * Which set of location ids a holds: another value after agg_reset (or
 * for another agg), never the same twice in a run, so that an id kept
 * elsewhere is known to be stale.
 */
uint64_t agg_loc_epoch(const struct agg *a);
/* Location id (>= 0) for a frame or label; -PBP_E_NOMEM on failure. */
int64_t agg_loc(struct agg *a, const char *name, const char *file, int line, uint32_t kind);
/*
 * The native locations' mappings and addresses (aggnat.h): agg_nat makes
 * them on first use (NULL when out of memory), agg_nat_of is NULL until then.
 * Cleared with the locations.
 */
struct aggnat;
struct aggnat *agg_nat(struct agg *a);
const struct aggnat *agg_nat_of(const struct agg *a);
/* Count a stack of location ids, root first. */
int agg_add(struct agg *a, const struct stack_tags *tags, const uint32_t *locs, uint32_t n,
	    uint64_t count);
/* Python thread names, by (pid, tid); NULL when never set. */
/*
 * The stack the last agg_add counted into (-1 if it failed or was folded):
 * a caller that will count the very same stack again can agg_bump it, with
 * no hashing. Ids stay valid until agg_reset.
 */
int64_t agg_last(const struct agg *a);
void agg_bump(struct agg *a, uint32_t id, uint64_t count);
int agg_set_thread_name(struct agg *a, uint32_t pid, uint32_t tid, const char *name);
const char *agg_thread_name(const struct agg *a, uint32_t pid, uint32_t tid);

/*
 * A process that keeps starting threads must not grow the profile for ever:
 * each process keeps at most AGG_MAX_THREADS threads of its own (in order of
 * their first sample); samples of later threads are counted as one thread,
 * tid AGG_OTHER_TID named AGG_OTHER_NAME (its root label AGG_OTHER_LABEL),
 * and agg_folded() says how many. Names of threads not sampled (yet) are
 * kept for the AGG_MAX_NAMED most recently named of each process.
 */
#define AGG_MAX_THREADS 4096
#define AGG_MAX_NAMED 4096
#define AGG_OTHER_TID 0
#define AGG_OTHER_NAME "[other threads]"
#define AGG_OTHER_LABEL "thread 0 " AGG_OTHER_NAME
/*
 * The root label "thread TID name" of a thread's stacks ("?" for no name),
 * or AGG_OTHER_LABEL for a thread past the cap: so that label locations stay
 * bounded too. (agg_add also turns the labels of folded stacks into it.)
 */
int64_t agg_thread_loc(struct agg *a, uint32_t pid, uint32_t tid, uint32_t ns_tid, const char *name);

/* Samples of pid counted as AGG_OTHER_NAME because it had too many threads. */
uint64_t agg_folded(const struct agg *a, uint32_t pid);
/* One line per process that had threads folded; nothing when none did. */
void agg_print_folds(const struct agg *a, FILE *o);

/*
 * What is known of a profiled process, for labels ("" when unknown): one row
 * per label, its pprof key in proc_label_key. The Kubernetes names and the
 * service come from the node agent only.
 */
enum proc_label {
	PL_PYTHON_VERSION,
	PL_CONTAINER_ID,
	PL_POD_UID,
	PL_SERVICE,
	PL_NAMESPACE,
	PL_POD,
	PL_CONTAINER,
	PL_NODE,
	PL__COUNT
};
extern const char *const proc_label_key[PL__COUNT];

struct proc_meta {
	uint32_t pid;
	uint32_t ns_pid;        /* its id in its own PID namespace, 0 when that is ours */
	const char *label[PL__COUNT];   /* NULL is taken as "" */
};
/* Copies m's strings (agg_process then gives them, never NULL). */
int agg_set_process(struct agg *a, const struct proc_meta *m);
/* A copy of m and its strings in one block (free() it), or NULL. */
struct proc_meta *proc_meta_dup(const struct proc_meta *m);
const struct proc_meta *agg_process(const struct agg *a, uint32_t pid);
/* The process stack i belongs to: its pid in *pid, what is known of it (NULL: nothing). */
const struct proc_meta *agg_stack_process(const struct agg *a, uint32_t i, uint32_t *pid);
/*
 * When every stack with a process root has the same one, take it off them
 * all (a run that followed subprocesses but profiled one process): true if
 * done. For a closed aggregate only: its stacks are not hashed again, so
 * nothing may be added to it after (agg_reset first).
 */
bool agg_drop_single_root(struct agg *a);
uint64_t agg_total(const struct agg *a);
uint32_t agg_nstacks(const struct agg *a);
uint32_t agg_nlocs(const struct agg *a);
const uint32_t *agg_stack(const struct agg *a, uint32_t i, uint32_t *n, uint64_t *count,
			  const struct stack_tags **tags);
void agg_loc_info(const struct agg *a, uint32_t id, const char **name, const char **file, int *line,
		  uint32_t *kind);

/* About how many bytes a holds: what a store of aggregates counts against its budget. */
size_t agg_bytes(const struct agg *a);

#endif /* PBP_AGGREGATE_AGGREGATE_H */
