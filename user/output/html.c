/* SPDX-License-Identifier: MIT */
/*
 * Interactive flame graph: one self-contained HTML page (no network when
 * opened). The page itself (markup, style, script) is user/output/page/'s parts,
 * compiled in by the Makefile; this file fills in its title and its data.
 *
 * The data is one JSON object in a <script type="application/json">, which
 * JSON.parse reads far faster than a script literal:
 *   meta    mode, hz, start_ms, duration_ms, total, stacks, version
 *   status_colour  each status's colour, indexed by enum pbp_status (status.c)
 *   strs    every distinct name, file and label once
 *   locs    4 numbers a location, in text order (id = rank, see flame.h):
 *           kind, name (strs index), file (strs index), line; for LOC_STATUS
 *           the line is the enum pbp_status value
 *   groups  4 numbers a (pid, tid) seen in the stack tags: pid, tid, thread
 *           label, process label (strs index or -1): the page's filter
 *   stacks  per stack, in tree order: frames shared with the previous stack,
 *           number of new frames, their location ids, count, group index;
 *           as one string of numbers (see put_num), a third of the size of
 *           a JSON array and as quick to read
 *   diff    only for `pybpfprof diff`: total (before, after samples), and
 *           before and after, each stack's samples in each profile, in the
 *           stacks' order and encoding (the stacks' own count is their sum)
 *   src     the source files, for the line heat (read/sources.h): why
 *           (none were read, and why), or budget (total, per file), pids
 *           (pid, root a process: its files are read under that root; < 0
 *           none, see root_id), files (path, root, index into texts or -1, why not read),
 *           hottest first, and texts (each distinct contents once)
 * Sorted stacks share long prefixes, so the stacks take about as many ids
 * as the call tree has nodes, and the page merges them into that tree in
 * one pass without lookups.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/compare.h"
#include "read/sources.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "core/version.h"
#include "core/text.h"
#include "output/flame.h"
#include "output/writers.h"

/* user/output/page/'s parts joined, as bytes (xxd -i): not NUL-terminated. */
static const char page[] = {
#include "flamegraph.html.inc"
};

#define MARK_TITLE "@@PBP_TITLE@@"
#define MARK_DATA "@@PBP_DATA@@"

/* ------------------------------------------------------------ strings */

/* Sorted, distinct strings; an id is an index. */
struct strs {
	const char **s;
	uint32_t n;
};

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void strs_add(struct strs *t, const char *s)
{
	if (s)
		t->s[t->n++] = s;
}

static void strs_seal(struct strs *t)
{
	uint32_t k = 0;

	qsort(t->s, t->n, sizeof(*t->s), cmp_str);
	for (uint32_t i = 0; i < t->n; i++)
		if (!k || strcmp(t->s[k - 1], t->s[i]))
			t->s[k++] = t->s[i];
	t->n = k;
}

static long strs_id(const struct strs *t, const char *s)
{
	const char **hit;

	if (!s)
		return -1;
	hit = bsearch(&s, t->s, t->n, sizeof(*t->s), cmp_str);
	return hit ? (long)(hit - t->s) : -1;
}

/* ------------------------------------------------------------ groups */

/* One (pid, tid) of the stack tags, with what the filter calls it. */
struct group {
	uint64_t key;           /* pid << 32 | tid */
	char *thread, *process; /* labels, NULL when unknown */
};

struct groups {
	struct group *g;
	uint32_t n;
};

static uint64_t tags_key(const struct stack_tags *t)
{
	return (uint64_t)t->pid << 32 | t->tid;
}

static int cmp_key(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = ((const struct group *)y)->key;

	return (a > b) - (a < b);
}

static uint32_t group_of(const struct groups *gs, const struct stack_tags *t)
{
	uint64_t key = tags_key(t);

	return (uint32_t)((struct group *)bsearch(&key, gs->g, gs->n, sizeof(*gs->g), cmp_key) - gs->g);
}

static int cmp_group(const void *x, const void *y)
{
	return cmp_key(&((const struct group *)x)->key, y);
}

/* Labels from the stack's own root frames, which say it best. */
static int label_from_frames(const struct agg *a, struct group *g, const uint32_t *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(a, f[i], &name, &file, &line, &kind);
		if (kind == LOC_PY)
			break;  /* labels are roots: nothing more to find */
		if (kind == LOC_THREAD && !g->thread && !(g->thread = strdup(name)))
			return -PBP_E_NOMEM;
		if (kind == LOC_PROCESS && !g->process && !(g->process = strdup(name)))
			return -PBP_E_NOMEM;
	}
	return 0;
}

/* Stacks that had no label frames: name them from the tags. */
static int label_from_tags(const struct agg *a, struct group *g)
{
	uint32_t pid = (uint32_t)(g->key >> 32), tid = (uint32_t)g->key;
	const char *name = agg_thread_name(a, pid, tid);

	/* asprintf leaves the pointer undefined on failure: reset it for groups_free. */
	/* tid 0 with a name: the threads a process had past the aggregate's cap */
	if (!g->thread && (tid || name) && (name ? asprintf(&g->thread, "thread %u %s", tid, name)
				       : asprintf(&g->thread, "thread %u", tid)) < 0) {
		g->thread = NULL;
		return -PBP_E_NOMEM;
	}
	if (!g->process && pid && asprintf(&g->process, "process %u", pid) < 0) {
		g->process = NULL;
		return -PBP_E_NOMEM;
	}
	return 0;
}

static int groups_build(const struct agg *a, struct groups *gs)
{
	uint32_t ns = agg_nstacks(a), k = 0;
	const struct stack_tags *t;
	uint32_t n;
	uint64_t c;

	gs->g = calloc(ns + 1, sizeof(*gs->g));
	if (!gs->g)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < ns; i++) {
		agg_stack(a, i, &n, &c, &t);
		gs->g[i].key = tags_key(t);
	}
	qsort(gs->g, ns, sizeof(*gs->g), cmp_group);
	for (uint32_t i = 0; i < ns; i++)
		if (!k || gs->g[k - 1].key != gs->g[i].key)
			gs->g[k++] = gs->g[i];
	gs->n = k;
	for (uint32_t i = 0; i < ns; i++) {
		const uint32_t *f = agg_stack(a, i, &n, &c, &t);

		if (label_from_frames(a, &gs->g[group_of(gs, t)], f, n))
			return -PBP_E_NOMEM;
	}
	for (uint32_t i = 0; i < gs->n; i++)
		if (label_from_tags(a, &gs->g[i]))
			return -PBP_E_NOMEM;
	return 0;
}

static void groups_free(struct groups *gs)
{
	for (uint32_t i = 0; gs->g && i < gs->n; i++) {
		free(gs->g[i].thread);
		free(gs->g[i].process);
	}
	free(gs->g);
}

/* ------------------------------------------------------------ data */

struct page_data {
	const struct agg *a;
	const struct profile_meta *m;
	struct flame_order fo;
	struct groups gs;
	struct strs strs;
	long *text_of;          /* per source file, its index into the page's texts (-1: none) */
};

static int strs_build(struct page_data *d)
{
	uint32_t nl = agg_nlocs(d->a);

	d->strs.s = calloc(2 * (size_t)nl + 2 * d->gs.n + 1, sizeof(*d->strs.s));
	if (!d->strs.s)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < nl; i++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(d->a, i, &name, &file, &line, &kind);
		strs_add(&d->strs, name);
		strs_add(&d->strs, file);
	}
	for (uint32_t i = 0; i < d->gs.n; i++) {
		strs_add(&d->strs, d->gs.g[i].thread);
		strs_add(&d->strs, d->gs.g[i].process);
	}
	strs_seal(&d->strs);
	return 0;
}

static void write_meta(FILE *o, const struct page_data *d)
{
	fputs("\"meta\":{\"mode\":", o);
	text_put_quoted(o, d->m->mode ? d->m->mode : "cpu", TEXT_HTML_JSON);
	fprintf(o, ",\"hz\":%u,\"start_ms\":%llu,\"duration_ms\":%.3f,\"total\":%llu,\"stacks\":%u,"
		"\"version\":\"%s\"}", d->m->hz, (unsigned long long)(d->m->start_unix_ns / 1000000),
		(double)d->m->duration_ns / 1e6, (unsigned long long)agg_total(d->a), agg_nstacks(d->a),
		PBP_VERSION);
}

/* The page's status palette, from the one table of statuses. */
static void write_status_colours(FILE *o)
{
	fputs(",\n\"status_colour\":[", o);
	for (uint32_t s = 0; s < ST__COUNT; s++)
		fprintf(o, "%s\"%s\"", s ? "," : "", status_info(s)->colour);
	fputc(']', o);
}

static void write_strs(FILE *o, const struct page_data *d)
{
	fputs(",\n\"strs\":[", o);
	for (uint32_t i = 0; i < d->strs.n; i++) {
		if (i)
			fputc(',', o);
		text_put_quoted(o, d->strs.s[i], TEXT_HTML_JSON);
	}
	fputc(']', o);
}

static void write_locs(FILE *o, const struct page_data *d)
{
	fputs(",\n\"locs\":[", o);
	for (uint32_t r = 0; r < d->fo.nlocs; r++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(d->a, d->fo.byrank[r], &name, &file, &line, &kind);
		if (kind == LOC_STATUS)
			line = (int)flame_status_of(name);
		fprintf(o, "%s%u,%ld,%ld,%d", r ? "," : "", kind, strs_id(&d->strs, name),
			strs_id(&d->strs, file), line);
	}
	fputc(']', o);
}

static void write_groups(FILE *o, const struct page_data *d)
{
	fputs(",\n\"groups\":[", o);
	for (uint32_t i = 0; i < d->gs.n; i++) {
		const struct group *g = &d->gs.g[i];

		fprintf(o, "%s%u,%u,%ld,%ld", i ? "," : "", (uint32_t)(g->key >> 32), (uint32_t)g->key,
			strs_id(&d->strs, g->thread), strs_id(&d->strs, g->process));
	}
	fputc(']', o);
}

/*
 * A number as 5 bits a character, least significant first; a character from
 * the upper half of the alphabet means more follow. Ids below 1024 take two
 * characters, prefix lengths and small counts one; none needs escaping.
 * The page's decoder (page/data.js) has the same alphabet.
 */
static void put_num(FILE *o, uint64_t v)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

	for (; v >= 32; v >>= 5)
		fputc(digits[32 | (v & 31)], o);
	fputc(digits[v], o);
}

static void write_stacks(FILE *o, const struct page_data *d)
{
	fputs(",\n\"stacks\":\"", o);
	for (uint32_t k = 0; k < d->fo.nstacks; k++) {
		uint32_t s = d->fo.stacks[k], n;
		uint32_t keep = k ? flame_lcp(d->a, d->fo.stacks[k - 1], s) : 0;
		const struct stack_tags *t;
		uint64_t count;
		const uint32_t *f = agg_stack(d->a, s, &n, &count, &t);

		put_num(o, keep);
		put_num(o, n - keep);
		for (uint32_t i = keep; i < n; i++)
			put_num(o, d->fo.rank[f[i]]);
		put_num(o, count);
		put_num(o, group_of(&d->gs, t));
	}
	fputc('"', o);
}

/* Each stack's count in the two profiles compared, in the order of write_stacks. */
static void write_diff(FILE *o, const struct page_data *d)
{
	const struct agg_diff *df = d->m->diff;

	fprintf(o, ",\n\"diff\":{\"total\":[%llu,%llu]", (unsigned long long)df->total[DIFF_BEFORE],
		(unsigned long long)df->total[DIFF_AFTER]);
	for (int side = 0; side < 2; side++) {
		fprintf(o, ",\"%s\":\"", side == DIFF_BEFORE ? "before" : "after");
		for (uint32_t k = 0; k < d->fo.nstacks; k++)
			put_num(o, df->count[side][d->fo.stacks[k]]);
		fputc('"', o);
	}
	fputc('}', o);
}

/* Each file's index into the page's texts: the first file of the same contents', or -1. */
static int texts_build(struct page_data *d)
{
	const struct sources *s = d->m->sources;
	long k = 0;

	if (!s)
		return 0;
	d->text_of = calloc(s->n + 1, sizeof(*d->text_of));
	if (!d->text_of)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct src_file *f = &s->f[i];

		d->text_of[i] = -1;
		for (uint32_t j = 0; f->text && j < i && d->text_of[i] < 0; j++)
			if (s->f[j].text && s->f[j].len == f->len && !memcmp(s->f[j].text, f->text, f->len))
				d->text_of[i] = d->text_of[j];
		if (f->text && d->text_of[i] < 0)
			d->text_of[i] = k++;
	}
	return 0;
}

/* A root as the page has it: its index, or why none as -1, -2, -3 (SRC_NO_ROOT, ...). */
static long root_id(uint32_t root)
{
	return SRC_IS_ROOT(root) ? (long)root : (long)root - (long)UINT32_MAX - 1;
}

static void write_sources(FILE *o, const struct page_data *d)
{
	const struct sources *s = d->m->sources;

	fputs(",\n\"src\":{", o);
	if (!s) {
		fputs("\"why\":", o);
		text_put_quoted(o, d->m->diff ? "a comparison of two profiles holds no source files"
				: "this profile holds no source files: it was converted from collapsed stacks or "
				  "pprof, which do not keep them", TEXT_HTML_JSON);
		fputc('}', o);
		return;
	}
	fprintf(o, "\"budget\":[%u,%u],\"embedded\":%zu,\"pids\":[", SRC_BUDGET, SRC_FILE_MAX, s->embedded);
	for (uint32_t i = 0; i < s->npids; i++)
		fprintf(o, "%s%u,%ld", i ? "," : "", s->pids[i].pid,
			root_id(s->pids[i].root));
	fputs("],\"files\":[", o);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct src_file *f = &s->f[i];

		fputs(i ? ",[" : "[", o);
		text_put_quoted(o, f->path, TEXT_HTML_JSON);
		fprintf(o, ",%ld,%ld,", root_id(f->root), d->text_of[i]);
		text_put_quoted(o, f->text ? "" : f->why, TEXT_HTML_JSON);
		fputc(']', o);
	}
	fputs("],\"texts\":[", o);
	for (uint32_t i = 0, k = 0; i < s->n; i++) {
		if (d->text_of[i] != (long)k)
			continue;       /* no text, or another file's */
		fputs(k++ ? "," : "", o);
		text_put_quoted(o, s->f[i].text, TEXT_HTML_JSON);
	}
	fputs("]}", o);
}

static void write_data(FILE *o, const struct page_data *d)
{
	fputs("{\"v\":1,", o);
	write_meta(o, d);
	write_status_colours(o);
	write_strs(o, d);
	write_locs(o, d);
	write_groups(o, d);
	write_stacks(o, d);
	if (d->m->diff)
		write_diff(o, d);
	write_sources(o, d);
	fputs("}", o);
}

/* ------------------------------------------------------------ page */

static void write_title(FILE *o, const struct profile_meta *m)
{
	fputs("pybpfprof: ", o);
	text_put(o, m->mode ? m->mode : "cpu", TEXT_XML);
	fputs(m->diff ? " differential flame graph" : " flame graph", o);
}

/* The template with its two markers replaced; -1 if it lacks them (a build bug). */
static int write_page(FILE *o, const struct page_data *d)
{
	const char *end = page + sizeof(page);
	const char *t = memmem(page, sizeof(page), MARK_TITLE, strlen(MARK_TITLE));
	const char *p = t ? memmem(t, (size_t)(end - t), MARK_DATA, strlen(MARK_DATA)) : NULL;

	if (!p)
		return -PBP_E_CORRUPT;
	fwrite(page, 1, (size_t)(t - page), o);
	write_title(o, d->m);
	t += strlen(MARK_TITLE);
	fwrite(t, 1, (size_t)(p - t), o);
	write_data(o, d);
	p += strlen(MARK_DATA);
	fwrite(p, 1, (size_t)(end - p), o);
	return 0;
}

int html_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct page_data d = { .a = a, .m = m };
	int err = flame_order_build(a, &d.fo);

	if (!err)
		err = groups_build(a, &d.gs);
	if (!err)
		err = strs_build(&d);
	if (!err)
		err = texts_build(&d);
	if (!err)
		err = write_page(o, &d);
	free(d.text_of);
	free(d.strs.s);
	groups_free(&d.gs);
	flame_order_free(&d.fo);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
