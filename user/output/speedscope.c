/* SPDX-License-Identifier: MIT */
/*
 * speedscope's own file format (https://www.speedscope.app/file-format-schema.json):
 * one shared frame table and one "sampled" profile per thread, so the viewer
 * offers a thread picker instead of one mixed flame graph.
 *
 * The thread a stack belongs to is its (pid, tid) tag; the "thread ..." root
 * label is dropped from the stacks since the profile's name says it. Process
 * and status labels stay in as plain frames. Weights are seconds (count / hz)
 * when the rate is known, so the viewer shows times; raw counts otherwise.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "core/version.h"
#include "core/text.h"
#include "output/writers.h"

static void write_frames(const struct agg *a, FILE *o)
{
	fputs("\"shared\":{\"frames\":[", o);
	for (uint32_t id = 0; id < agg_nlocs(a); id++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		/* Every location gets an entry, so a frame's index is its location id. */
		agg_loc_info(a, id, &name, &file, &line, &kind);
		fputs(id ? ",\n{\"name\":" : "\n{\"name\":", o);
		text_put_quoted(o, name, TEXT_JSON);
		if (kind == LOC_PY && file[0]) {
			fputs(",\"file\":", o);
			text_put_quoted(o, file, TEXT_JSON);
		}
		if (kind == LOC_PY && line >= 0)
			fprintf(o, ",\"line\":%d", line);
		fputc('}', o);
	}
	fputs("]},\n", o);
}

static const struct agg *sort_agg;      /* qsort has no context argument in C11 */

static uint64_t thread_key(const struct agg *a, uint32_t i)
{
	const struct stack_tags *t;
	uint64_t count;
	uint32_t n;

	agg_stack(a, i, &n, &count, &t);
	return (uint64_t)t->pid << 32 | t->tid;
}

/* Stacks grouped by thread, threads in (pid, tid) order, stacks in aggregate order. */
static int by_thread(const void *pa, const void *pb)
{
	uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
	uint64_t kx = thread_key(sort_agg, x), ky = thread_key(sort_agg, y);

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The "thread TID name" label of the thread's stacks, else one made from the name table. */
static void thread_title(const struct agg *a, const uint32_t *idx, uint32_t nidx, char *out, size_t len)
{
	const struct stack_tags *t;
	uint64_t count;
	uint32_t n;
	const char *name;

	for (uint32_t k = 0; k < nidx; k++) {
		const uint32_t *locs = agg_stack(a, idx[k], &n, &count, &t);

		for (uint32_t j = 0; j < n; j++) {
			const char *file;
			uint32_t kind;
			int line;

			agg_loc_info(a, locs[j], &name, &file, &line, &kind);
			if (kind == LOC_THREAD) {
				snprintf(out, len, "%s", name);
				return;
			}
		}
	}
	agg_stack(a, idx[0], &n, &count, &t);
	name = agg_thread_name(a, t->pid, t->tid);
	if (!t->tid && !name)
		snprintf(out, len, "all threads");
	else
		snprintf(out, len, "thread %u%s%s", t->tid, name ? " " : "", name ? name : "");
}

static void write_weight(FILE *o, uint64_t count, unsigned hz)
{
	if (hz)
		fprintf(o, "%.9g", (double)count / hz);
	else
		fprintf(o, "%llu", (unsigned long long)count);
}

/* One "sampled" profile from the stacks idx[0..nidx) of one thread. */
static void write_profile(const struct agg *a, const struct profile_meta *m, const uint32_t *idx,
			  uint32_t nidx, FILE *o)
{
	char title[512];
	uint64_t total = 0, count;
	uint32_t n, first = 1;

	thread_title(a, idx, nidx, title, sizeof(title));
	fputs("{\"type\":\"sampled\",\"name\":", o);
	text_put_quoted(o, title, TEXT_JSON);
	fprintf(o, ",\"unit\":\"%s\",\"startValue\":0,\n\"samples\":[", m->hz ? "seconds" : "none");
	for (uint32_t k = 0; k < nidx; k++) {
		const uint32_t *locs = agg_stack(a, idx[k], &n, &count, NULL);

		fputs(k ? ",\n[" : "\n[", o);
		first = 1;
		for (uint32_t j = 0; j < n; j++) {
			const char *name, *file;
			uint32_t kind;
			int line;

			agg_loc_info(a, locs[j], &name, &file, &line, &kind);
			if (kind == LOC_THREAD)
				continue;
			fprintf(o, first ? "%u" : ",%u", locs[j]);
			first = 0;
		}
		fputc(']', o);
		total += count;
	}
	fputs("],\n\"weights\":[", o);
	for (uint32_t k = 0; k < nidx; k++) {
		agg_stack(a, idx[k], &n, &count, NULL);
		if (k)
			fputc(',', o);
		write_weight(o, count, m->hz);
	}
	fputs("],\"endValue\":", o);
	write_weight(o, total, m->hz);
	fputc('}', o);
}

static uint64_t run_total(const struct agg *a, const uint32_t *idx, uint32_t n)
{
	uint64_t total = 0, count;
	uint32_t len;

	for (uint32_t k = 0; k < n; k++) {
		agg_stack(a, idx[k], &len, &count, NULL);
		total += count;
	}
	return total;
}

/* The profiles, one per run of equal thread keys; returns the busiest one's index. */
static uint32_t write_profiles(const struct agg *a, const struct profile_meta *m, const uint32_t *order,
			       uint32_t ns, FILE *o)
{
	uint32_t nprof = 0, busiest = 0;
	uint64_t best = 0;

	fputs("\"profiles\":[", o);
	for (uint32_t start = 0, end; start < ns; start = end) {
		uint64_t w;

		for (end = start + 1; end < ns && thread_key(a, order[end]) == thread_key(a, order[start]); end++)
			;
		if (nprof)
			fputs(",\n", o);
		write_profile(a, m, order + start, end - start, o);
		w = run_total(a, order + start, end - start);
		if (w > best)
			best = w, busiest = nprof;
		nprof++;
	}
	fputs("],\n", o);
	return busiest;
}

int speedscope_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	uint32_t ns = agg_nstacks(a), busiest;
	uint32_t *order = malloc((ns ? ns : 1) * sizeof(*order));

	if (!order)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < ns; i++)
		order[i] = i;
	sort_agg = a;
	qsort(order, ns, sizeof(*order), by_thread);
	sort_agg = NULL;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", o);
	fprintf(o, "\"exporter\":\"pybpfprof %s\",\"name\":\"pybpfprof %s profile\",\n", PBP_VERSION,
		m->mode ? m->mode : "cpu");
	write_frames(a, o);
	busiest = write_profiles(a, m, order, ns, o);
	fprintf(o, "\"activeProfileIndex\":%u}\n", busiest);
	free(order);
	return ferror(o) ? -PBP_E_IO : 0;
}
