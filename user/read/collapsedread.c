/* SPDX-License-Identifier: MIT */
/*
 * Collapsed stacks read back into an aggregate, so a profile written once
 * can be rendered again in any format (`pybpfprof convert`).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "read/collapsedread.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "core/limits.h"

/*
 * Every line pybpfprof writes fits: at most PBP_MAX_LOCS frames of at most
 * ~8 KiB each (names and files are read up to 1 KiB, and escaping takes 4
 * bytes for one at worst). The buffer grows with the longest line read.
 */
#define LINE_MAX_LEN ((size_t)256 << 20)
#define FRAMES_MAX PBP_MAX_LOCS
#define TOO_MANY "16,388"       /* FRAMES_MAX, for the message (checked below) */
_Static_assert(FRAMES_MAX == 16388, "TOO_MANY says FRAMES_MAX");
/*
 * Counts are bounded so that no sum of them (the aggregate's total, a flame
 * graph node's) can wrap, and every one is exact as a double, which the
 * writers divide by: 2^53 samples is 2,800 years at 100 kHz.
 */
#define COUNT_MAX (1ull << 53)

/* "name (file:line)" or "name (file)"; anything else is a bare name. */
static int64_t py_frame(struct agg *a, char *f)
{
	size_t n = strlen(f);
	char *open = NULL, *colon;
	int line = -1;

	if (n && f[n - 1] == ')')
		for (char *p = f + n - 1; p > f; p--)
			if (p[0] == '(' && p[-1] == ' ') {
				open = p;
				break;
			}
	if (!open)
		return agg_loc(a, f, NULL, -1, LOC_PY);
	f[n - 1] = '\0';
	open[-1] = '\0';
	colon = strrchr(open + 1, ':');
	if (colon && colon[1]) {
		char *end;
		long v = strtol(colon + 1, &end, 10);

		if (!*end && v >= 0 && v < (1L << 30)) {
			line = (int)v;
			*colon = '\0';
		}
	}
	return agg_loc(a, f, open + 1, line, LOC_PY);
}

static int64_t frame_loc(struct agg *a, char *f, struct stack_tags *t)
{
	const char *rest;
	uint32_t id, ns;
	int st;

	/* tid 0: the fold of threads past the aggregate's cap (AGG_OTHER_LABEL) */
	if (root_label_parse(f, "thread", &id, &ns, &rest)) {
		t->tid = id;
		if (rest)
			agg_set_thread_name(a, t->pid, t->tid, rest);
		return agg_loc(a, f, NULL, -1, LOC_THREAD);
	}
	if (root_label_parse(f, "process", &id, &ns, &rest) && id > 0) {
		t->pid = id;
		return agg_loc(a, f, NULL, -1, LOC_PROCESS);
	}
	if ((st = status_by_label(f)) >= 0) {
		t->status = (uint32_t)st;
		return agg_loc(a, f, NULL, -1, LOC_STATUS);
	}
	return py_frame(a, f);
}

/*
 * Nothing but spaces: no frame. pybpfprof never writes one (a name is never
 * empty, and a frame with a file says it), so such a frame, as much as an
 * empty one (";;"), is a damaged line rather than a frame to draw blank.
 */
static bool blank(const char *f)
{
	return f[strspn(f, " \t")] == '\0';
}

/* 0, -PBP_E_INVAL with *why for a line that is not a stack, or -PBP_E_NOMEM. */
static int parse_line(struct agg *a, char *line, uint32_t *locs, const char **why)
{
	struct stack_tags t = { .status = ST_UNKNOWN };
	char *sp = strrchr(line, ' '), *end;
	unsigned long long count;
	uint32_t n = 0;

	*why = "it does not end in a space and a count";
	if (!sp || sp[1] < '0' || sp[1] > '9')
		return -PBP_E_INVAL;
	count = strtoull(sp + 1, &end, 10);
	if (*end)
		return -PBP_E_INVAL;
	*why = "its count takes the total over 2^53";
	if (count > COUNT_MAX - agg_total(a))
		return -PBP_E_INVAL;
	if (count == 0)
		return 0;   /* flamegraph.pl takes it, and it counts for nothing */
	*sp = '\0';
	*why = "it has no frame";
	if (blank(line))
		return -PBP_E_INVAL;
	for (char *f = line, *next; f; f = next) {
		int64_t id;

		if ((next = strchr(f, ';')))
			*next++ = '\0';
		*why = "it has an empty frame";
		if (blank(f))
			return -PBP_E_INVAL;
		*why = "it has more than " TOO_MANY " frames";
		if (n >= FRAMES_MAX)
			return -PBP_E_INVAL;
		if ((id = frame_loc(a, f, &t)) < 0)
			return (int)id;
		locs[n++] = (uint32_t)id;
	}
	return agg_add(a, &t, locs, n, count);
}

/*
 * The next line into *buf (*cap bytes, not 0) without its line end ("\n", or "\r\n": a file
 * that went through Windows reads the same), *len its length: 1; 0 at the
 * end; -PBP_E_INVAL for a line longer than LINE_MAX_LEN; -PBP_E_IO when
 * reading failed (errno says why); -PBP_E_NOMEM.
 */
static int read_line(FILE *in, char **buf, size_t *cap, size_t *len)
{
	int c = EOF;

	*len = 0;
	while ((c = getc_unlocked(in)) != EOF && c != '\n') {
		if (*len >= LINE_MAX_LEN)
			return -PBP_E_INVAL;
		if (*len + 1 >= *cap) {
			size_t ncap = *cap * 2;
			char *p;

			if (!(p = realloc(*buf, ncap)))
				return -PBP_E_NOMEM;
			*buf = p, *cap = ncap;
		}
		(*buf)[(*len)++] = (char)c;
	}
	if (c == EOF && ferror(in))
		return -PBP_E_IO;
	if (c == EOF && *len == 0)
		return 0;
	if (*len && (*buf)[*len - 1] == '\r')
		--*len;
	(*buf)[*len] = '\0';
	return 1;
}

int collapsed_read(struct agg *a, FILE *in, size_t *lineno, const char **why)
{
	uint32_t *locs = malloc(sizeof(*locs) * FRAMES_MAX);
	size_t cap = 4096, len;
	char *line = malloc(cap);
	int err = locs && line ? 0 : -PBP_E_NOMEM, r = 0;

	*lineno = 0;
	*why = NULL;
	while (!err && (r = read_line(in, &line, &cap, &len)) > 0) {
		++*lineno;
		*why = "it holds a NUL byte";
		if (strlen(line) != len)
			err = -PBP_E_INVAL;
		else if (line[0] != '\0' && line[0] != '#')
			err = parse_line(a, line, locs, why);
	}
	if (!err && r < 0) {
		++*lineno;
		*why = "it is longer than 256 MiB";
		err = r;
	}
	free(line);
	free(locs);
	return err;
}
