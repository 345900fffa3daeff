/* SPDX-License-Identifier: MIT */
/*
 * The figures of `pybpfprof top`, drawn by screen.c on a terminal and
 * printed here as a plain table otherwise: per thread, the samples and their
 * split by status (a bar of status marks); the GIL held and waited for, as
 * shares of all samples; the functions by own or total share (functab).
 * Text from the target is escaped (core/text.c) before it is cut to width.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "output/live.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "core/text.h"
#include "output/topview.h"

double live_pct(uint64_t n, uint64_t all)
{
	return all ? 100.0 * (double)n / (double)all : 0.0;
}

const char *live_sort_name(enum live_sort by)
{
	return by == LIVE_BY_TOTAL ? "total" : by == LIVE_BY_NAME ? "name" : "own";
}

/* ------------------------------------------------------------- threads */

static int by_thread(const void *pa, const void *pb)
{
	const struct live_thread *x = pa, *y = pb;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Busiest first: the rows that fit on a screen are those that matter. */
static int by_samples(const void *pa, const void *pb)
{
	const struct live_thread *x = pa, *y = pb;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return by_thread(pa, pb);
}

/* One row per stack first (sorted, then folded per thread): no hash table for a few hundred threads. */
/*
 * A waiting task's stack (sample/asyncidle.c, --async in wall mode): its leaf
 * "[awaiting] ...". Counted apart: it is a task's time, not its thread's.
 */
static bool waiting_task(const struct agg *a, const uint32_t *locs, uint32_t len)
{
	const char *name, *file;
	int line;
	uint32_t kind;

	if (!locs || len == 0)
		return false;
	agg_loc_info(a, locs[len - 1], &name, &file, &line, &kind);
	/* No Python function has such a name: a frame of asyncidle.c's own. */
	return kind == LOC_PY && name && strncmp(name, "[awaiting] ", 11) == 0;
}

static int count_threads(const struct agg *a, struct live_view *v)
{
	uint32_t n = agg_nstacks(a), k = 0;
	struct live_thread *t = calloc(n ? n : 1, sizeof(*t));

	if (!t)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct stack_tags *tags;
		uint64_t count;
		uint32_t len;
		const uint32_t *locs = agg_stack(a, i, &len, &count, &tags);

		t[i].pid = tags->pid;
		t[i].tid = tags->tid;
		if (waiting_task(a, locs, len)) {
			t[i].waiting = count;
			v->waiting += count;
			continue;
		}
		t[i].samples = count;
		t[i].status[tags->status < ST__COUNT ? tags->status : ST_UNKNOWN] = count;
		v->samples += count;
		v->status[tags->status < ST__COUNT ? tags->status : ST_UNKNOWN] += count;
	}
	qsort(t, n, sizeof(*t), by_thread);
	for (uint32_t i = 0; i < n; i++) {
		if (k && t[k - 1].pid == t[i].pid && t[k - 1].tid == t[i].tid) {
			t[k - 1].samples += t[i].samples;
			t[k - 1].waiting += t[i].waiting;
			for (int s = 0; s < ST__COUNT; s++)
				t[k - 1].status[s] += t[i].status[s];
		} else {
			t[k++] = t[i];
		}
	}
	qsort(t, k, sizeof(*t), by_samples);
	for (uint32_t i = 0; i < k; i++)
		t[i].name = agg_thread_name(a, t[i].pid, t[i].tid);
	v->threads = t;
	v->nthreads = k;
	return 0;
}

/* ------------------------------------------------------------- functions */

struct one_thread {
	uint32_t pid, tid;
};

static bool of_thread(const struct stack_tags *tags, void *ctx)
{
	const struct one_thread *w = ctx;

	return tags->pid == w->pid && tags->tid == w->tid;
}

int live_build(const struct agg *a, bool filter, uint32_t pid, uint32_t tid, struct live_view *v)
{
	struct one_thread w = { pid, tid };
	int err;

	memset(v, 0, sizeof(*v));
	v->filtered = filter;
	v->pid = pid;
	v->tid = tid;
	if ((err = count_threads(a, v)) != 0 ||
	    (err = functab_build_where(a, &v->ft, filter ? of_thread : NULL, &w)) != 0)
		goto fail;
	v->order = malloc((v->ft.n ? v->ft.n : 1) * sizeof(*v->order));
	if (!v->order) {
		err = -PBP_E_NOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < v->ft.n; i++)
		if (v->ft.f[i].total)
			v->order[v->norder++] = i;
	v->fsamples = filter ? 0 : v->samples + v->waiting;     /* a thread not in this span has none */
	for (uint32_t i = 0; filter && i < v->nthreads; i++)
		if (v->threads[i].pid == pid && v->threads[i].tid == tid)
			v->fsamples = v->threads[i].samples + v->threads[i].waiting;
	live_sort(v, LIVE_BY_OWN);
	return 0;
fail:
	live_free(v);
	return err;
}

void live_free(struct live_view *v)
{
	free(v->threads);
	free(v->order);
	functab_free(&v->ft);
	memset(v, 0, sizeof(*v));
}

static const struct functab *sort_tab;  /* qsort has no context argument in C11 */
static enum live_sort sort_by;

static int by_name(const struct func_stat *x, const struct func_stat *y)
{
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->file, y->file);
}

static int compare(const void *pa, const void *pb)
{
	const struct func_stat *x = &sort_tab->f[*(const uint32_t *)pa];
	const struct func_stat *y = &sort_tab->f[*(const uint32_t *)pb];
	uint64_t x1 = sort_by == LIVE_BY_TOTAL ? x->total : x->own, y1 = sort_by == LIVE_BY_TOTAL ? y->total : y->own;
	uint64_t x2 = sort_by == LIVE_BY_TOTAL ? x->own : x->total, y2 = sort_by == LIVE_BY_TOTAL ? y->own : y->total;

	if (sort_by == LIVE_BY_NAME)
		return by_name(x, y);
	if (x1 != y1)
		return x1 > y1 ? -1 : 1;
	if (x2 != y2)
		return x2 > y2 ? -1 : 1;
	return by_name(x, y);
}

void live_sort(struct live_view *v, enum live_sort by)
{
	sort_tab = &v->ft;
	sort_by = by;
	qsort(v->order, v->norder, sizeof(*v->order), compare);
	sort_tab = NULL;
}

/* ------------------------------------------------------------- text */

/*
 * Largest remainder: the marks add up to width exactly, and a status with
 * any samples at all keeps at least its rounded share.
 */
void live_bar(const uint64_t status[ST__COUNT], uint64_t samples, char *out, int width)
{
	int cells[ST__COUNT], used = 0, o = 0;
	uint64_t rest[ST__COUNT];

	for (int s = 0; s < ST__COUNT; s++) {
		uint64_t scaled = samples ? status[s] * (uint64_t)width : 0;

		cells[s] = samples ? (int)(scaled / samples) : 0;
		rest[s] = samples ? scaled % samples : 0;
		used += cells[s];
	}
	while (samples && used < width) {
		int best = 0;

		for (int s = 1; s < ST__COUNT; s++)
			if (rest[s] > rest[best])
				best = s;
		cells[best]++, rest[best] = 0, used++;
	}
	for (int s = 0; s < ST__COUNT; s++)
		for (int i = 0; i < cells[s]; i++)
			out[o++] = status_info((uint32_t)s)->mark;
	while (o < width)
		out[o++] = '.';
	out[o] = '\0';
}

/* Bytes of s's first n characters (code points; an invalid byte counts as one). */
static size_t chars_bytes(const char *s, size_t n)
{
	size_t b = 0;

	for (; n && s[b]; n--) {
		size_t l = utf8_seq_len((const unsigned char *)s + b);

		b += l ? l : 1;
	}
	return b;
}

void live_func_text(const struct func_stat *f, char *out, size_t len, int width)
{
	char name[512], file[1024];
	size_t nl, fl;

	text_escape(name, sizeof(name), f->name, TEXT_PLAIN);
	text_escape(file, sizeof(file), f->file[0] ? f->file : "?", TEXT_PLAIN);
	if (f->min_line >= 0)
		snprintf(file + strlen(file), sizeof(file) - strlen(file), ":%d", f->min_line);
	nl = text_len(name);
	fl = text_len(file);
	if (width <= 0 || nl + 2 + fl <= (size_t)width) {
		snprintf(out, len, "%s  %s", name, file);
		return;
	}
	if (nl + 2 + 8 > (size_t)width) {      /* no room for a useful file: the name alone, cut */
		snprintf(out, len, "%.*s", (int)chars_bytes(name, (size_t)width), name);
		return;
	}
	/* The file's tail: its name and line matter more than its directories. */
	snprintf(out, len, "%s  ...%s", name, file + chars_bytes(file, fl - ((size_t)width - nl - 5)));
}

void live_thread_text(const struct live_thread *t, char *out, size_t len, int width)
{
	char name[256];

	text_escape(name, sizeof(name), t->name ? t->name : "?", TEXT_PLAIN);
	snprintf(out, len, "%u %s", t->tid, name);
	if (width > 0)
		out[chars_bytes(out, (size_t)width)] = '\0';
}

/* ------------------------------------------------------------- the plain table */

#define BAR_WIDTH 20

static void print_head(FILE *o, const struct live_head *h, const struct live_view *v)
{
	fprintf(o, "pybpfprof top: %.0f s, %s mode at %u Hz, %d process%s; %s%s\n", h->run_secs, h->mode,
		h->hz, h->processes, h->processes == 1 ? "" : "es",
		h->cumulative ? "since the start" : "last interval",
		h->paused ? " [paused]" : h->ended ? " [ended]" : "");
	fprintf(o, "samples %llu in %.1f s (%.1f/s), lost %llu; ",
		(unsigned long long)v->samples, h->secs, h->secs > 0 ? (double)v->samples / h->secs : 0.0,
		(unsigned long long)h->lost);
	if (h->no_gil)
		fprintf(o, "no GIL: free-threaded\n");
	else
		fprintf(o, "GIL held %.1f%%, waited for %.1f%%\n", live_pct(v->status[ST_RUNNING], v->samples),
			live_pct(v->status[ST_GIL_WAIT], v->samples));
	if (v->waiting)
		fprintf(o, "waiting tasks %llu samples more (--async: one a tick for each task not "
			"running); the functions' shares are of both\n", (unsigned long long)v->waiting);
}

static void print_threads(FILE *o, const struct live_view *v, int width)
{
	char bar[BAR_WIDTH + 1], who[256];

	fprintf(o, "%-24s %8s  %-*s  STATUS\n", "THREAD", "SAMPLES", BAR_WIDTH, "BAR");
	for (uint32_t i = 0; i < v->nthreads; i++) {
		const struct live_thread *t = &v->threads[i];

		live_thread_text(t, who, sizeof(who), width > 0 ? 24 : 0);
		live_bar(t->status, t->samples, bar, BAR_WIDTH);
		fprintf(o, "%-24s %8llu  %s ", who, (unsigned long long)t->samples, bar);
		for (int s = 0; s < ST__COUNT; s++)
			if (t->status[s])
				fprintf(o, " %s %.0f%%", status_info((uint32_t)s)->name,
					live_pct(t->status[s], t->samples));
		fputc('\n', o);
	}
}

void live_print(FILE *o, const struct live_head *h, const struct live_view *v, int rows, int width)
{
	char text[2048];

	print_head(o, h, v);
	print_threads(o, v, width);
	if (v->filtered)
		fprintf(o, "%6s %7s  FUNCTION  FILE:LINE (thread %u, by %s)\n", "%OWN", "%TOTAL", v->tid,
			live_sort_name(h->sort));
	else
		fprintf(o, "%6s %7s  FUNCTION  FILE:LINE (by %s)\n", "%OWN", "%TOTAL", live_sort_name(h->sort));
	for (uint32_t i = 0; i < v->norder && (rows <= 0 || i < (uint32_t)rows); i++) {
		const struct func_stat *f = &v->ft.f[v->order[i]];

		live_func_text(f, text, sizeof(text), width > 16 ? width - 16 : width);
		fprintf(o, "%6.1f %7.1f  %s\n", live_pct(f->own, v->fsamples), live_pct(f->total, v->fsamples), text);
	}
}
