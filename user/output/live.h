/* SPDX-License-Identifier: MIT */
#ifndef PBP_OUTPUT_LIVE_H
#define PBP_OUTPUT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate/status.h"
#include "output/topview.h"

struct agg;

/*
 * What `pybpfprof top` shows of an aggregate (the last interval's or the
 * whole run's): its threads with their status split, the GIL's share, and
 * the functions of all threads or of one, sorted. Strings point into the
 * aggregate: a view lives no longer than it.
 */
struct live_thread {
	uint32_t pid, tid;
	const char *name;               /* NULL: never named */
	uint64_t samples;
	uint64_t status[ST__COUNT];
	uint64_t waiting;               /* its loop's waiting tasks' samples (--async, wall): not its time */
};

enum live_sort { LIVE_BY_OWN, LIVE_BY_TOTAL, LIVE_BY_NAME };

struct live_view {
	uint64_t samples;               /* of every thread */
	uint64_t waiting;               /* of waiting tasks (--async, wall), on top of samples */
	uint64_t status[ST__COUNT];     /* of every thread */
	struct live_thread *threads;    /* the busiest first, then by pid and tid */
	uint32_t nthreads;
	bool filtered;                  /* the functions are one thread's: */
	uint32_t pid, tid;
	uint64_t fsamples;              /* that thread's samples and its tasks' (all when not filtered) */
	struct functab ft;
	uint32_t *order;                /* ft.f's indices, sorted; only those with samples */
	uint32_t norder;
};

/* The figures around the view, from outside the aggregate. */
struct live_head {
	const char *mode;               /* "cpu", "wall", "gil" */
	unsigned hz;
	double run_secs;                /* since the start */
	double secs;                    /* the span the view covers */
	uint64_t lost;                  /* samples the kernel could not hand over, in that span */
	int processes;
	bool cumulative, paused, ended;
	bool no_gil;                    /* every process free-threaded: no GIL figures, said so */
	enum live_sort sort;
};

/*
 * Build v from a; filter: only the functions of thread (pid, tid). 0 or
 * -PBP_E_NOMEM (v then empty, safe to free).
 */
int live_build(const struct agg *a, bool filter, uint32_t pid, uint32_t tid, struct live_view *v);
void live_sort(struct live_view *v, enum live_sort by);
void live_free(struct live_view *v);
const char *live_sort_name(enum live_sort by);

/* Share of n in all, in percent; 0 when all is 0. */
double live_pct(uint64_t n, uint64_t all);
/*
 * A status bar of width characters (plus NUL) into out: each status's mark
 * ('R', 'G', ...) in proportion to its samples, '.' for none at all.
 */
void live_bar(const uint64_t status[ST__COUNT], uint64_t samples, char *out, int width);
/* "name  file:line" of function f, escaped and cut to width characters (file cut from the left). */
void live_func_text(const struct func_stat *f, char *out, size_t len, int width);
/* "tid name", escaped and cut to width characters. */
void live_thread_text(const struct live_thread *t, char *out, size_t len, int width);

/*
 * The plain table (`--once`, stdout not a terminal): header, threads, then
 * at most rows functions (<= 0: all), width columns for the text.
 */
void live_print(FILE *o, const struct live_head *h, const struct live_view *v, int rows, int width);

#endif /* PBP_OUTPUT_LIVE_H */
