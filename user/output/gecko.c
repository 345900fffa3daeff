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
 * A recording that writes this format keeps when each sample was taken
 * (m->timeline): samples are then rows at their times from the run's first
 * sample, and each stretch of one status is an interval marker
 * (ThreadStatus), so a wall-mode profile reads as a timeline. A profile
 * without times (convert, or a timeline that filled up) has each thread's
 * samples laid out one interval apart from 0, grouped by status and then in
 * call tree order: a track as long as the thread was sampled, each status
 * one stretch of it. Every sample is a row, as the Profiler counts rows; a
 * null-stack row closes each track, which importers that weigh a sample by
 * the time to the next one need.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "aggregate/timeline.h"
#include "core/errors.h"
#include "core/version.h"
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
	int64_t *leaf_of;       /* agg stack index -> its stack table entry in its thread */
	/* one thread's samples in order */
	int64_t *s_leaf;
	double *s_ms;
	uint8_t *s_status;
	size_t ns, caps;
	/* the timeline, sorted by thread then time; NULL: samples are laid out */
	const struct timeline *tl;
	size_t *tl_order, tl_next;
	uint64_t tl_base;
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

/* ------------------------------------------------------------ one thread's samples */

static int push_sample(struct gecko *g, int64_t leaf, double ms, uint32_t status)
{
	if (g->ns == g->caps) {
		size_t ncap = g->caps ? g->caps * 2 : 4096;
		int64_t *l = realloc(g->s_leaf, ncap * sizeof(*l));
		double *t = l ? realloc(g->s_ms, ncap * sizeof(*t)) : NULL;
		uint8_t *st = t ? realloc(g->s_status, ncap) : NULL;

		if (l)
			g->s_leaf = l;
		if (t)
			g->s_ms = t;
		if (!st)
			return -PBP_E_NOMEM;
		g->s_status = st;
		g->caps = ncap;
	}
	g->s_leaf[g->ns] = leaf;
	g->s_ms[g->ns] = ms;
	g->s_status[g->ns++] = (uint8_t)(status < ST__COUNT ? status : ST_UNKNOWN);
	return 0;
}

/* No times: each stack's samples one interval apart, in the order of g->order. */
static int laid_out(struct gecko *g, uint32_t first, uint32_t end)
{
	double t = 0;
	int err = 0;

	for (uint32_t k = first; !err && k < end; k++) {
		uint64_t count;
		uint32_t st = tags_of(g->a, g->order[k], &count)->status;

		for (uint64_t i = 0; !err && i < count; i++, t += g->interval)
			err = push_sample(g, g->leaf[k], t, st);
	}
	return err;
}

static uint64_t thread_of(const struct agg *a, uint32_t stack)
{
	uint64_t c;
	const struct stack_tags *t = tags_of(a, stack, &c);

	return (uint64_t)t->pid << 32 | t->tid;
}

/* Times: this thread's run of the sorted timeline (threads come in the same order). */
static int timed(struct gecko *g, uint64_t thread)
{
	const struct timeline *tl = g->tl;
	int err = 0;

	while (g->tl_next < tl->n && thread_of(g->a, tl->stack[g->tl_order[g->tl_next]]) < thread)
		g->tl_next++;
	for (; !err && g->tl_next < tl->n; g->tl_next++) {
		size_t i = g->tl_order[g->tl_next];
		uint64_t c;

		if (thread_of(g->a, tl->stack[i]) != thread)
			break;
		err = push_sample(g, g->leaf_of[tl->stack[i]], (double)(tl->ns[i] - g->tl_base) / 1e6,
				  tags_of(g->a, tl->stack[i], &c)->status);
	}
	return err;
}

static int cmp_timeline(const void *x, const void *y, void *ctx)
{
	const struct gecko *g = ctx;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	uint64_t a = thread_of(g->a, g->tl->stack[i]), b = thread_of(g->a, g->tl->stack[j]);

	if (a != b)
		return a < b ? -1 : 1;
	return (g->tl->ns[i] > g->tl->ns[j]) - (g->tl->ns[i] < g->tl->ns[j]);
}

/* The timeline sorted by thread, then time, and its first sample's time. */
static int sort_timeline(struct gecko *g)
{
	const struct timeline *tl = g->tl;

	if (!(g->tl_order = malloc((tl->n + 1) * sizeof(*g->tl_order))))
		return -PBP_E_NOMEM;
	g->tl_base = UINT64_MAX;
	for (size_t i = 0; i < tl->n; i++) {
		g->tl_order[i] = i;
		if (tl->ns[i] < g->tl_base)
			g->tl_base = tl->ns[i];
	}
	qsort_r(g->tl_order, tl->n, sizeof(*g->tl_order), cmp_timeline, g);
	return 0;
}

/* ------------------------------------------------------------ writing */

static uint32_t status_category(uint32_t st)
{
	return st == ST_SLEEPING || st == ST_DISK || st == ST_STOPPED ? CAT_IDLE : CAT_OTHER;
}

static void write_meta(FILE *o, const struct gecko *g, const struct profile_meta *m)
{
	fprintf(o, "{\"meta\":{\"version\":%d,\"interval\":%.17g,\"startTime\":%llu,\"shutdownTime\":null,"
		"\"processType\":0,\"stackwalk\":0,\"debug\":0,\"gcpoison\":0,\"asyncstack\":0,"
		"\"presymbolicated\":true,\"product\":\"pybpfprof %s (%s mode)\",", GECKO_VERSION, g->interval,
		(unsigned long long)(m->start_unix_ns / 1000000), PBP_VERSION, m->mode ? m->mode : "cpu");
	fprintf(o, "\"misc\":\"%s\",", g->tl ? "samples at the times they were taken"
		: "samples laid out per thread by status and stack, one interval apart: no sample times kept");
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

/* One row a sample, and a null row closing the track. Returns the track's end. */
static double write_samples(FILE *o, const struct gecko *g)
{
	double end = g->ns ? g->s_ms[g->ns - 1] + g->interval : 0;

	fputs(",\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[", o);
	for (size_t i = 0; i < g->ns; i++) {
		fputs(i ? ",[" : "[", o);
		if (g->s_leaf[i] < 0)
			fputs("null", o);
		else
			fprintf(o, "%lld", (long long)g->s_leaf[i]);
		fprintf(o, ",%.3f,0]", g->s_ms[i]);
	}
	fprintf(o, "%s[null,%.3f,0]]}", g->ns ? "," : "", end);
	return end;
}

/*
 * A marker for each stretch of one status, from its first sample to the
 * next stretch's (or one interval past its last). Its name is the status's
 * label, string nframes + status (frame i's location is string i).
 */
static void write_markers(FILE *o, const struct gecko *g)
{
	bool comma = false;

	fputs(",\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,\"category\":4,"
	      "\"data\":5},\"data\":[", o);
	for (size_t i = 0, j; i < g->ns; i = j) {
		uint32_t st = g->s_status[i];
		double end;

		for (j = i + 1; j < g->ns && g->s_status[j] == st; j++)
			;
		if (st == ST_UNKNOWN)   /* a profile read back without statuses has none */
			continue;
		end = j < g->ns ? g->s_ms[j] : g->s_ms[j - 1] + g->interval;
		fprintf(o, "%s[%u,%.3f,%.3f,1,%u,{\"type\":\"ThreadStatus\",\"status\":", comma ? "," : "",
			g->nframes + st, g->s_ms[i], end, status_category(st));
		text_put_quoted(o, status_info(st)->name, TEXT_JSON);
		fprintf(o, ",\"samples\":%zu}]", j - i);
		comma = true;
	}
	fputs("]}", o);
}

static void write_tables(FILE *o, const struct gecko *g)
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
		text_put_quoted(o, buf, TEXT_JSON);
		fputc(',', o);
	}
	for (uint32_t st = 0; st < ST__COUNT; st++) {     /* the markers' names */
		text_put_quoted(o, status_info(st)->label, TEXT_JSON);
		fputs(st + 1 < ST__COUNT ? "," : "]", o);
	}
}

static void write_thread(FILE *o, const struct gecko *g, uint32_t stack, bool comma)
{
	uint64_t c;
	const struct stack_tags *t = tags_of(g->a, stack, &c);
	const char *name = agg_thread_name(g->a, t->pid, t->tid);
	char fallback[32];

	if (!name || !name[0]) {
		snprintf(fallback, sizeof(fallback), "thread %u", t->tid);
		name = fallback;
	}
	fputs(comma ? ",\n{\"name\":" : "\n{\"name\":", o);
	text_put_quoted(o, name, TEXT_JSON);
	fprintf(o, ",\"processType\":\"default\",\"pid\":%u,\"tid\":%u,\"registerTime\":0", t->pid, t->tid);
	fprintf(o, ",\"unregisterTime\":%.3f", write_samples(o, g));
	write_markers(o, g);
	write_tables(o, g);
	fputc('}', o);
}

/* Thread by thread: its tables, its samples (timed or laid out), then the thread. */
static int write_threads(FILE *o, struct gecko *g, uint32_t ns)
{
	int err = 0;

	for (uint32_t first = 0, end; !err && first < ns; first = end) {
		uint64_t thread = thread_of(g->a, g->order[first]);

		for (end = first + 1; end < ns && thread_of(g->a, g->order[end]) == thread; end++)
			;
		reset_tables(g);
		g->ns = 0;
		if ((err = build_tables(g, first, end)) != 0)
			break;
		for (uint32_t k = first; k < end; k++)
			g->leaf_of[g->order[k]] = g->leaf[k];
		err = g->tl ? timed(g, thread) : laid_out(g, first, end);
		if (!err)
			write_thread(o, g, g->order[first], first > 0);
	}
	return err;
}

static int gecko_alloc(struct gecko *g, struct flame_order *fo)
{
	uint32_t ns = agg_nstacks(g->a), nl = agg_nlocs(g->a);

	g->order = calloc(ns + 1, sizeof(*g->order));
	g->pos = calloc(ns + 1, sizeof(*g->pos));
	g->leaf = calloc(ns + 1, sizeof(*g->leaf));
	g->leaf_of = calloc(ns + 1, sizeof(*g->leaf_of));
	g->frame_of = malloc((nl + 1) * sizeof(*g->frame_of));
	g->frame_loc = calloc(nl + 1, sizeof(*g->frame_loc));
	if (!g->order || !g->pos || !g->leaf || !g->leaf_of || !g->frame_of || !g->frame_loc)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < nl; i++)
		g->frame_of[i] = -1;
	for (uint32_t k = 0; k < ns; k++) {
		g->pos[fo->stacks[k]] = k;
		g->order[k] = k;
	}
	qsort_r(g->order, ns, sizeof(*g->order), cmp_order, g);
	return g->tl ? sort_timeline(g) : 0;
}

static void gecko_free(struct gecko *g)
{
	free(g->order);
	free(g->pos);
	free(g->leaf);
	free(g->leaf_of);
	free(g->frame_of);
	free(g->frame_loc);
	free(g->prefix);
	free(g->sframe);
	free(g->slot);
	free(g->s_leaf);
	free(g->s_ms);
	free(g->s_status);
	free(g->tl_order);
}

int gecko_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct gecko g = { .a = a, .interval = m->hz ? 1000.0 / m->hz : 1.0 };
	struct flame_order fo;
	int err;

	/* Times only when every sample has one: a full timeline holds the run's start only. */
	if (m->timeline && !m->timeline->full && m->timeline->n)
		g.tl = m->timeline;
	err = flame_order_build(a, &fo) ? -PBP_E_NOMEM : gecko_alloc(&g, &fo);
	if (!err) {
		write_meta(o, &g, m);
		err = write_threads(o, &g, agg_nstacks(a));
		fputs("]}\n", o);
	}
	flame_order_free(&fo);
	gecko_free(&g);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
