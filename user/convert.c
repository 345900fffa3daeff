/* SPDX-License-Identifier: MIT */
/*
 * Collapsed stacks read back into an aggregate, so a profile written once
 * can be rendered again in any format (`pybpfprof convert`).
 */
#include <stdlib.h>
#include <string.h>

#include "pyprof.h"

#define LINE_MAX_LEN (1 << 20)
#define FRAMES_MAX PBP_MAX_DEPTH
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
	for (uint32_t s = 0; s < ST__COUNT; s++)
		if (strcmp(f, status_label(s)) == 0) {
			t->status = s;
			return agg_loc(a, f, NULL, -1, LOC_STATUS);
		}
	return py_frame(a, f);
}

static int parse_line(struct agg *a, char *line, uint32_t *locs)
{
	struct stack_tags t = { .status = ST_UNKNOWN };
	char *sp = strrchr(line, ' '), *end, *save = NULL;
	unsigned long long count;
	uint32_t n = 0;

	if (!sp)
		return -1;
	count = strtoull(sp + 1, &end, 10);
	if (end == sp + 1 || (*end && *end != '\n') || sp[1] == '-' || count > COUNT_MAX - agg_total(a))
		return -1;
	if (count == 0)
		return 0;   /* flamegraph.pl takes it, and it counts for nothing */
	*sp = '\0';
	for (char *f = strtok_r(line, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
		int64_t id = frame_loc(a, f, &t);

		if (id < 0 || n >= FRAMES_MAX)
			return -1;
		locs[n++] = (uint32_t)id;
	}
	return n ? agg_add(a, &t, locs, n, count) : -1;
}

int collapsed_read(struct agg *a, FILE *in, size_t *lineno)
{
	char *line = malloc(LINE_MAX_LEN);
	uint32_t *locs = malloc(sizeof(*locs) * FRAMES_MAX);
	int err = line && locs ? 0 : -1;

	*lineno = 0;
	while (!err && fgets(line, LINE_MAX_LEN, in)) {
		++*lineno;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		err = parse_line(a, line, locs);
	}
	free(line);
	free(locs);
	return err;
}
