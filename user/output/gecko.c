/* SPDX-License-Identifier: MIT */
/*
 * The Gecko profile format, what the Firefox Profiler (profiler.firefox.com)
 * opens: one track per thread, each with its own string, frame and stack
 * tables, a sample per row with its time, and markers.
 *
 *   {"meta": {version 27, interval, startTime, categories, markerSchema, ...},
 *    "libs": [], "pausedRanges": [], "processes": [],
 *    "threads": [{name, pid, tid, processType, registerTime, unregisterTime,
 *                 samples:    {schema {stack, time, eventDelay}, data [[stack, ms, 0]]},
 *                 markers:    {schema {name, startTime, endTime, phase, category, data}, data},
 *                 stackTable: {schema {prefix, frame}, data [[prefix or null, frame]]},
 *                 frameTable: {schema {location, relevantForJS, innerWindowID,
 *                              implementation, line, column, category, subcategory}, data},
 *                 stringTable: [...]}]}
 *
 * A frame's location is its text, "name (file:line)", which the Profiler
 * reads as a function in a file. Thread and process label frames are not
 * frames here: each thread is its own track, named by its thread's name and
 * grouped under its pid. Status leaf frames (--status) stay in.
 *
 * The aggregate keeps counts, not when each sample was taken, so each
 * thread's samples are laid out one interval apart from 0, grouped by status
 * and then in call tree order: a track is as long as the thread was sampled,
 * each status one stretch of it, marked by an interval marker (ThreadStatus)
 * so the marker chart and timeline show the split. Every sample is a row,
 * as the Profiler counts rows; a null-stack row closes each track, which
 * importers that weigh a sample by the time to the next one need.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "core/text.h"
#include "output/flame.h"
#include "output/writers.h"

#define GECKO_VERSION 27        /* the frame table without "optimizations" */
enum { CAT_OTHER, CAT_PYTHON, CAT_IDLE };

struct gecko {
	const struct agg *a;
	double interval;        /* ms */
	uint32_t *order;        /* stack indices: by thread, status, then tree order */
	uint32_t *pos;          /* stack index -> place in tree order (flame.h) */
	/* one thread's tables, rebuilt for each */
	int64_t *frame_of;      /* loc id -> frame index, -1 */
	uint32_t *frame_loc;    /* frame index -> loc id */
	uint32_t nframes;
	int64_t *prefix;        /* stack index -> its prefix, -1 for a root */
	uint32_t *sframe;       /* stack index -> frame index */
	uint32_t nstk, capstk;
	uint64_t *slot;         /* hash of (prefix, frame) -> stack index + 1 */
	uint32_t nslots;
	int64_t *leaf;          /* per stack of the thread: its stack table entry, -1: none */
};

static const struct stack_tags *tags_of(const struct agg *a, uint32_t i, uint64_t *count)
{
	const struct stack_tags *t;
	uint32_t n;

	agg_stack(a, i, &n, count, &t);
	return t;
}

static int cmp_order(const void *x, const void *y, void *ctx)
{
	const struct gecko *g = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	uint64_t c;
	const struct stack_tags *a = tags_of(g->a, i, &c), *b = tags_of(g->a, j, &c);

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->status != b->status)
		return a->status < b->status ? -1 : 1;
	return (g->pos[i] > g->pos[j]) - (g->pos[i] < g->pos[j]);
}

/* ------------------------------------------------------------ one thread's tables */

static int64_t frame_for(struct gecko *g, uint32_t loc)
{
	if (g->frame_of[loc] < 0) {
		g->frame_loc[g->nframes] = loc;
		g->frame_of[loc] = g->nframes++;
	}
	return g->frame_of[loc];
}

static uint64_t key_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	return k ^ (k >> 33);
}

static int grow_stacks(struct gecko *g)
{
	uint32_t ncap = g->capstk ? g->capstk * 2 : 1024;
	int64_t *p = realloc(g->prefix, ncap * sizeof(*p));
	uint32_t *f = p ? realloc(g->sframe, ncap * sizeof(*f)) : NULL;
	uint64_t *s = calloc(2 * (size_t)ncap, sizeof(*s));

	if (p)
		g->prefix = p;
	if (f)
		g->sframe = f;
	if (!p || !f || !s) {
		free(s);
		return -PBP_E_NOMEM;
	}
	free(g->slot);
	g->slot = s;
	g->nslots = 2 * ncap;
	g->capstk = ncap;
	for (uint32_t i = 0; i < g->nstk; i++) {    /* rehash */
		uint64_t h = key_hash((uint64_t)(g->prefix[i] + 1) << 32 | g->sframe[i]) & (g->nslots - 1);

		while (g->slot[h])
			h = (h + 1) & (g->nslots - 1);
		g->slot[h] = i + 1;
	}
	return 0;
}

/* The stack table entry of frame under prefix (-1: a root), added if new. */
static int64_t stack_for(struct gecko *g, int64_t prefix, uint32_t frame)
{
	uint64_t h;

	if (g->nstk == g->capstk && grow_stacks(g))
		return -PBP_E_NOMEM;
	h = key_hash((uint64_t)(prefix + 1) << 32 | frame) & (g->nslots - 1);
	for (; g->slot[h]; h = (h + 1) & (g->nslots - 1)) {
		uint32_t s = (uint32_t)g->slot[h] - 1;

		if (g->prefix[s] == prefix && g->sframe[s] == frame)
			return s;
	}
	g->prefix[g->nstk] = prefix;
	g->sframe[g->nstk] = frame;
	g->slot[h] = ++g->nstk;
	return g->nstk - 1;
}

/* Frames and stacks of the thread's stacks order[first, end), leaf[k] for each. */
static int build_tables(struct gecko *g, uint32_t first, uint32_t end)
{
	for (uint32_t k = first; k < end; k++) {
		const char *name, *file;
		uint32_t n, kind;
		uint64_t c;
		int line;
		const uint32_t *f = agg_stack(g->a, g->order[k], &n, &c, NULL);
		int64_t s = -1;

		for (uint32_t j = 0; j < n; j++) {
			agg_loc_info(g->a, f[j], &name, &file, &line, &kind);
			if (kind == LOC_THREAD || kind == LOC_PROCESS)
				continue;       /* the track says it */
			if ((s = stack_for(g, s, (uint32_t)frame_for(g, f[j]))) < 0)
				return (int)s;
		}
		g->leaf[k] = s;
	}
	return 0;
}

static void reset_tables(struct gecko *g)
{
	for (uint32_t i = 0; i < g->nframes; i++)
		g->frame_of[g->frame_loc[i]] = -1;
	g->nframes = 0;
	g->nstk = 0;
	if (g->slot)
		memset(g->slot, 0, g->nslots * sizeof(*g->slot));
}

/* ------------------------------------------------------------ writing */

static uint32_t status_category(uint32_t st)
{
	return st == ST_SLEEPING || st == ST_DISK ? CAT_IDLE : CAT_OTHER;
}

static void write_meta(FILE *o, const struct gecko *g, const struct profile_meta *m)
{
	fprintf(o, "{\"meta\":{\"version\":%d,\"interval\":%.17g,\"startTime\":%llu,\"shutdownTime\":null,"
		"\"processType\":0,\"stackwalk\":0,\"debug\":0,\"gcpoison\":0,\"asyncstack\":0,"
		"\"presymbolicated\":true,\"product\":\"pybpfprof %s (%s mode)\",", GECKO_VERSION, g->interval,
		(unsigned long long)(m->start_unix_ns / 1000000), PBP_VERSION, m->mode ? m->mode : "cpu");
	fputs("\"misc\":\"samples laid out per thread by status and stack, one interval apart: "
	      "pybpfprof keeps counts, not sample times\",", o);
	fputs("\"categories\":[{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
	      "{\"name\":\"Python\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
	      "{\"name\":\"Idle\",\"color\":\"transparent\",\"subcategories\":[\"Other\"]}],", o);
	fputs("\"markerSchema\":[{\"name\":\"ThreadStatus\",\"tooltipLabel\":\"{marker.name}\","
	      "\"tableLabel\":\"{marker.name}: {marker.data.samples} samples\",\"chartLabel\":\"{marker.name}\","
	      "\"display\":[\"marker-chart\",\"marker-table\",\"timeline-overview\"],"
	      "\"data\":[{\"key\":\"status\",\"label\":\"Status\",\"format\":\"string\",\"searchable\":true},"
	      "{\"key\":\"samples\",\"label\":\"Samples\",\"format\":\"integer\"}]}]},\n", o);
	fputs("\"libs\":[],\"pausedRanges\":[],\"processes\":[],\"threads\":[", o);
}

/* One row per sample; markers for each status's stretch. Returns the track's end. */
static double write_samples(FILE *o, const struct gecko *g, uint32_t first, uint32_t end)
{
	double t = 0;
	bool comma = false;

	fputs(",\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[", o);
	for (uint32_t k = first; k < end; k++) {
		uint64_t count;

		tags_of(g->a, g->order[k], &count);
		for (uint64_t i = 0; i < count; i++, t += g->interval) {
			fputs(comma ? ",[" : "[", o);
			comma = true;
			if (g->leaf[k] < 0)
				fputs("null", o);
			else
				fprintf(o, "%lld", (long long)g->leaf[k]);
			fprintf(o, ",%.6f,0]", t);
		}
	}
	fprintf(o, "%s[null,%.6f,0]]}", comma ? "," : "", t);
	return t;
}

/* Marker names are strings after the frames' (frame i's location is string i). */
static void write_markers(FILE *o, const struct gecko *g, uint32_t first, uint32_t end)
{
	uint32_t nstr = g->nframes;
	bool comma = false;
	double t = 0;

	fputs(",\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,\"category\":4,"
	      "\"data\":5},\"data\":[", o);
	for (uint32_t k = first; k < end;) {
		uint64_t c, n = 0;
		uint32_t st = tags_of(g->a, g->order[k], &c)->status;

		for (; k < end && tags_of(g->a, g->order[k], &c)->status == st; k++)
			n += c;
		if (st != ST_UNKNOWN) {         /* a profile read back without statuses has none */
			fprintf(o, "%s[%u,%.6f,%.6f,1,%u,{\"type\":\"ThreadStatus\",\"status\":", comma ? "," : "",
				nstr, t, t + (double)n * g->interval, status_category(st));
			text_put_quoted(o, status_info(st)->name, TEXT_JSON);
			fprintf(o, ",\"samples\":%llu}]", (unsigned long long)n);
			comma = true;
		}
		t += (double)n * g->interval;
		nstr++;
	}
	fputs("]}", o);
}

static void write_tables(FILE *o, const struct gecko *g, uint32_t first, uint32_t end)
{
	char buf[2048];

	fputs(",\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[", o);
	for (uint32_t s = 0; s < g->nstk; s++) {
		if (g->prefix[s] < 0)
			fprintf(o, "%s[null,%u]", s ? "," : "", g->sframe[s]);
		else
			fprintf(o, "%s[%lld,%u]", s ? "," : "", (long long)g->prefix[s], g->sframe[s]);
	}
	fputs("]},\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
	      "\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,\"subcategory\":7},\"data\":[", o);
	for (uint32_t f = 0; f < g->nframes; f++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(g->a, g->frame_loc[f], &name, &file, &line, &kind);
		fprintf(o, "%s[%u,false,null,null,", f ? "," : "", f);
		if (kind == LOC_PY && line >= 0)
			fprintf(o, "%d", line);
		else
			fputs("null", o);
		fprintf(o, ",null,%u,0]", kind == LOC_PY ? CAT_PYTHON
			: kind == LOC_STATUS ? status_category(flame_status_of(name)) : CAT_OTHER);
	}
	fputs("]},\"stringTable\":[", o);
	for (uint32_t f = 0; f < g->nframes; f++) {
		loc_format(g->a, g->frame_loc[f], buf, sizeof(buf));
		if (f)
			fputc(',', o);
		text_put_quoted(o, buf, TEXT_JSON);
	}
	for (uint32_t k = first; k < end; k++) {   /* marker names, one a status stretch */
		uint64_t c;
		uint32_t st = tags_of(g->a, g->order[k], &c)->status;

		if (k == first || tags_of(g->a, g->order[k - 1], &c)->status != st) {
			fputs(g->nframes || k > first ? "," : "", o);
			text_put_quoted(o, status_info(st)->label, TEXT_JSON);
		}
	}
	fputc(']', o);
}

static void write_thread(FILE *o, const struct gecko *g, uint32_t first, uint32_t end, bool comma)
{
	uint64_t c;
	const struct stack_tags *t = tags_of(g->a, g->order[first], &c);
	const char *name = agg_thread_name(g->a, t->pid, t->tid);
	char fallback[32];

	if (!name || !name[0]) {
		snprintf(fallback, sizeof(fallback), "thread %u", t->tid);
		name = fallback;
	}
	fputs(comma ? ",\n{\"name\":" : "\n{\"name\":", o);
	text_put_quoted(o, name, TEXT_JSON);
	fprintf(o, ",\"processType\":\"default\",\"pid\":%u,\"tid\":%u,\"registerTime\":0", t->pid, t->tid);
	fprintf(o, ",\"unregisterTime\":%.6f", write_samples(o, g, first, end));
	write_markers(o, g, first, end);
	write_tables(o, g, first, end);
	fputc('}', o);
}

static int write_threads(FILE *o, struct gecko *g, uint32_t ns)
{
	int err = 0;

	for (uint32_t first = 0, end; !err && first < ns; first = end) {
		uint64_t c;
		const struct stack_tags *t = tags_of(g->a, g->order[first], &c);

		for (end = first + 1; end < ns; end++) {
			const struct stack_tags *u = tags_of(g->a, g->order[end], &c);

			if (u->pid != t->pid || u->tid != t->tid)
				break;
		}
		reset_tables(g);
		if (!(err = build_tables(g, first, end)))
			write_thread(o, g, first, end, first > 0);
	}
	return err;
}

static int gecko_alloc(struct gecko *g, struct flame_order *fo)
{
	uint32_t ns = agg_nstacks(g->a), nl = agg_nlocs(g->a);

	g->order = calloc(ns + 1, sizeof(*g->order));
	g->pos = calloc(ns + 1, sizeof(*g->pos));
	g->leaf = calloc(ns + 1, sizeof(*g->leaf));
	g->frame_of = malloc((nl + 1) * sizeof(*g->frame_of));
	g->frame_loc = calloc(nl + 1, sizeof(*g->frame_loc));
	if (!g->order || !g->pos || !g->leaf || !g->frame_of || !g->frame_loc)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < nl; i++)
		g->frame_of[i] = -1;
	for (uint32_t k = 0; k < ns; k++) {
		g->pos[fo->stacks[k]] = k;
		g->order[k] = k;
	}
	qsort_r(g->order, ns, sizeof(*g->order), cmp_order, g);
	return 0;
}

int gecko_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct gecko g = { .a = a, .interval = m->hz ? 1000.0 / m->hz : 1.0 };
	struct flame_order fo;
	int err = flame_order_build(a, &fo) ? -PBP_E_NOMEM : gecko_alloc(&g, &fo);

	if (!err) {
		write_meta(o, &g, m);
		err = write_threads(o, &g, agg_nstacks(a));
		fputs("]}\n", o);
	}
	flame_order_free(&fo);
	free(g.order);
	free(g.pos);
	free(g.leaf);
	free(g.frame_of);
	free(g.frame_loc);
	free(g.prefix);
	free(g.sframe);
	free(g.slot);
	return err || ferror(o) ? -1 : 0;
}
