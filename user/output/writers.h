/* SPDX-License-Identifier: MIT */
#ifndef PBP_OUTPUT_WRITERS_H
#define PBP_OUTPUT_WRITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct agg;
struct agg_diff;
struct sources;
struct timeline;

/*
 * What every writer gets besides the aggregate. Label locations (LOC_THREAD,
 * LOC_PROCESS, LOC_STATUS) are already in the stacks where the options asked
 * for them; formats with a better place for them (pprof labels) skip them and
 * use the stack's tags instead.
 */
struct profile_meta {
	const char *mode;       /* "cpu", "wall" or "gil" */
	unsigned hz;
	uint64_t start_unix_ns; /* wall-clock start of the run */
	uint64_t duration_ns;
	/*
	 * pprof for a profile store (Pyroscope makes a series of each distinct
	 * set of string labels): no thread name, status or command line, whose
	 * values multiply series; numbers (pid, thread_id) stay.
	 */
	bool series_labels;
	/*
	 * html only: the page compares two profiles (pybpfprof diff); the
	 * aggregate given is diff->u.
	 */
	const struct agg_diff *diff;
	/*
	 * html only: the source files read at the end of a recording, for the
	 * page's line heat; NULL: none were (convert, diff), which the page says.
	 */
	const struct sources *sources;
	/* gecko only: when each sample was taken (a recording's); NULL: not kept */
	const struct timeline *timeline;
};

/* collapsed.c: one line per distinct stack text, root first, `;`-separated, a space, the count. */
int collapsed_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/*
 * A location as text: "name (file:line)" or "name (file)" for Python frames,
 * the bare name of one with neither, the label otherwise. Like snprintf: the
 * length it needs.
 */
int loc_format(const struct agg *a, uint32_t id, char *out, size_t len);
/*
 * a's stacks as the lines collapsed_write prints, counted into lines: one
 * stack per distinct line, each frame a LOC_PY location named by its escaped
 * text, tags zero. 0 or -PBP_E_NOMEM.
 */
int collapsed_lines(const struct agg *a, struct agg *lines);
/* speedscope.c: speedscope's JSON file format, one sampled profile per thread. */
int speedscope_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/*
 * gecko.c: the Gecko profile format the Firefox Profiler opens, a track per
 * thread; samples laid out by status and stack, since times are not kept.
 */
int gecko_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* pprof.c: gzipped profile.proto; label frames become sample labels. */
int pprof_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* pstats.c: the marshal'ed dict Python's pstats reads; see pstats.c for the figures. */
int pstats_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* html.c: a self-contained interactive flame graph page (user/output/page/). */
int html_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/*
 * diffout.c: before and after as collapsed lines with two counts, flamegraph.pl's
 * difffolded form: "STACK BEFORE AFTER", BEFORE scaled to AFTER's total.
 */
int diff_collapsed_write(const struct agg *before, const struct agg *after, FILE *o);
/* svg.c: a static flame graph, 1200 px wide, a <title> tooltip per frame. */
int svg_write(const struct agg *a, const struct profile_meta *m, FILE *o);

#endif /* PBP_OUTPUT_WRITERS_H */
