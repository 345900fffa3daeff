/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof dump --async`: every asyncio task of a running 3.11+ process,
 * read once from outside: its name, whether it runs, its coroutine chain
 * and the tasks awaiting it (what `python3.14 -m asyncio pstree` shows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/dump.h"
#include "core/errors.h"
#include "core/text.h"
#include "cpython/asyncio_legacy.h"
#include "cpython/asyncio_tasks.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/stack.h"
#include "cpython/thread.h"
#include "cpython/threadname.h"
#include "proc/procfs.h"
#include "proc/remote.h"

struct adump {
	struct pyproc *p;
	FILE *o;
	bool json;
	struct pythread *ts;
	size_t nts;
	char (*tnames)[PBP_NAME_LEN];
	struct aio_graph g;
	char (*names)[128];     /* the tasks' names, by index */
	struct aio_layout l;
	uint64_t md;            /* before 3.14: asyncio.tasks' dict, where its registries are */
};

static void put_frame(const struct adump *d, const struct aio_frame *f, bool first)
{
	int err;
	const struct codeinfo *ci = codecache_get(d->p->codes, d->p, f->code, NULL, &err);
	const char *name = ci ? ci->name : "<unreadable>";
	const char *file = ci ? ci->file : "<unreadable>";
	int line = ci ? frame_line(d->p, ci, f->instr) : -1;

	if (d->json) {
		fputs(first ? "{\"function\": " : ", {\"function\": ", d->o);
		text_put_quoted(d->o, name, TEXT_JSON);
		fputs(", \"file\": ", d->o);
		text_put_quoted(d->o, file, TEXT_JSON);
		fprintf(d->o, ", \"line\": %d}", line);
		return;
	}
	fputs("      ", d->o);
	text_put(d->o, name, TEXT_PLAIN);
	fputs(" (", d->o);
	text_put(d->o, file, TEXT_PLAIN);
	if (line >= 0)
		fprintf(d->o, ":%d", line);
	fputs(")\n", d->o);
}

/* Innermost first, as dump prints a thread's stack. */
static void put_frames(const struct adump *d, const struct aio_task *t)
{
	for (size_t i = t->nframes; i-- > 0;)
		put_frame(d, &t->frames[i], i + 1 == t->nframes);
}

static void task_json(const struct adump *d, size_t i, bool first)
{
	const struct aio_task *t = &d->g.tasks[i];

	fprintf(d->o, "%s\n    {\"id\": \"0x%llx\", \"name\": ", first ? "" : ",",
		(unsigned long long)t->addr);
	text_put_quoted(d->o, d->names[i], TEXT_JSON);
	if (t->owner >= 0)
		fprintf(d->o, ", \"thread\": %d", (int)d->ts[t->owner].tid);
	else
		fputs(", \"thread\": null", d->o);
	fprintf(d->o, ", \"state\": \"%s\", \"chain_complete\": %s, \"frames\": [",
		t->running ? "running" : "pending", t->chain_cut ? "false" : "true");
	put_frames(d, t);
	fputs("], \"awaited_by\": [", d->o);
	for (unsigned k = 0; k < t->nawaiters; k++) {
		fprintf(d->o, "%s{\"id\": \"0x%llx\", \"name\": ", k ? ", " : "",
			(unsigned long long)d->g.tasks[t->awaiters[k]].addr);
		text_put_quoted(d->o, d->names[t->awaiters[k]], TEXT_JSON);
		fputc('}', d->o);
	}
	fprintf(d->o, "], \"awaiters_unknown\": %u}", (unsigned)t->awaiters_unknown);
}

static void task_text(const struct adump *d, size_t i)
{
	const struct aio_task *t = &d->g.tasks[i];

	fputs("  Task \"", d->o);
	text_put(d->o, d->names[i], TEXT_PLAIN);
	fprintf(d->o, "\" (0x%llx) %s", (unsigned long long)t->addr, t->running ? "running" : "pending");
	for (unsigned k = 0; k < t->nawaiters; k++) {
		fputs(k ? ", \"" : ", awaited by \"", d->o);
		text_put(d->o, d->names[t->awaiters[k]], TEXT_PLAIN);
		fputc('"', d->o);
	}
	if (t->awaiters_unknown)
		fprintf(d->o, "%s%u not a task read", t->nawaiters ? ", " : ", awaited by ",
			(unsigned)t->awaiters_unknown);
	fputs(t->chain_cut ? " (chain incomplete)\n" : "\n", d->o);
	put_frames(d, t);
	if (t->nframes == 0)
		fputs("      (no coroutine frame)\n", d->o);
}

/* Tasks grouped by the thread whose list holds them; owner -1: of threads that ended. */
static void tasks_text(const struct adump *d)
{
	for (long owner = -1; owner < (long)d->nts; owner++) {
		size_t n = 0;

		for (size_t i = 0; i < d->g.n; i++)
			n += d->g.tasks[i].owner == owner;
		if (n == 0)
			continue;
		if (owner < 0) {
			fprintf(d->o, d->l.legacy ? "Tasks of loops not running: %zu\n" :
				"Tasks of threads that ended: %zu\n", n);
		} else {
			fprintf(d->o, "Thread %d \"", (int)d->ts[owner].tid);
			text_put(d->o, d->tnames[owner][0] ? d->tnames[owner] : "?", TEXT_PLAIN);
			fprintf(d->o, "\": %zu task%s\n", n, n == 1 ? "" : "s");
		}
		for (size_t i = 0; i < d->g.n; i++)
			if (d->g.tasks[i].owner == owner)
				task_text(d, i);
	}
}

#define NSTATS 10

static void stats_of(const struct aio_stats *s, unsigned v[NSTATS])
{
	const unsigned a[NSTATS] = { s->list_faults, s->list_cycles, s->list_long, s->not_tasks,
				     s->chain_faults, s->chain_cycles, s->chain_long, s->set_faults,
				     s->set_corrupt, s->beyond };

	memcpy(v, a, sizeof(a));
}

static const char *const stat_names[NSTATS] = {
	"list_faults", "list_cycles", "list_too_long", "not_tasks", "chain_faults",
	"chain_cycles", "chain_too_long", "awaited_by_faults", "awaited_by_corrupt",
	"tasks_past_bound",     /* counted, not read: past AIO_MAX_TASKS */
};

/* What could not be read: the graph of a running process is a best effort, said so. */
static void put_stats(const struct adump *d)
{
	unsigned v[NSTATS], sum = 0;

	stats_of(&d->g.st, v);
	for (int i = 0; i < NSTATS; i++)
		sum += v[i];
	if (d->json) {
		fputs("\n], \"unread\": {", d->o);
		for (int i = 0; i < NSTATS; i++)
			fprintf(d->o, "%s\"%s\": %u", i ? ", " : "", stat_names[i], v[i]);
		fputs("}}\n", d->o);
		return;
	}
	if (!sum)
		return;
	fputs("Incomplete (the process ran while read):", d->o);
	for (int i = 0; i < NSTATS; i++)
		if (v[i])
			fprintf(d->o, " %s %u", stat_names[i], v[i]);
	fputc('\n', d->o);
}

static void put_header(const struct adump *d, bool loaded)
{
	const struct pyproc *p = d->p;

	if (d->json) {
		fprintf(d->o, "{\"pid\": %d, \"version\": \"%s\", \"asyncio_loaded\": %s, \"tasks\": [",
			(int)p->pid, p->version, loaded ? "true" : "false");
		return;
	}
	fprintf(d->o, "Process %d: ", (int)p->pid);
	text_put(d->o, p->binary, TEXT_PLAIN);
	fprintf(d->o, " (Python %s): %zu asyncio task%s%s\n", p->version, d->g.n, d->g.n == 1 ? "" : "s",
		loaded ? "" : " (the _asyncio module is not loaded)");
}

static int read_threads(struct adump *d)
{
	d->ts = calloc(PBP_MAX_THREADS, sizeof(*d->ts));
	if (!d->ts)
		return -PBP_E_NOMEM;
	return pythreads_read(d->p, d->ts, PBP_MAX_THREADS, &d->nts);
}

/* The layout: 3.14's table, or before it the generated one (with the threads read for it). */
static int find_layout(struct adump *d)
{
	int err = aio_find_layout(d->p, &d->l);

	if (err != -PBP_E_VERSION)
		return err;
	err = read_threads(d);
	if (!err && d->nts == 0)
		err = -PBP_E_NOENT;
	return err ? err : aio_legacy_find(d->p, d->ts[0].interp, &d->l, &d->md);
}

static int collect(struct adump *d)
{
	int err = d->ts ? 0 : read_threads(d);

	if (!err)
		err = d->l.legacy ? aio_legacy_tasks(d->p, &d->l, d->md, d->ts, d->nts, &d->g)
				  : aio_read_tasks(d->p, &d->l, d->ts, d->nts, &d->g);
	if (!err) {
		d->tnames = calloc(d->nts ? d->nts : 1, sizeof(*d->tnames));
		d->names = calloc(d->g.n ? d->g.n : 1, sizeof(*d->names));
		if (!d->tnames || !d->names)
			return -PBP_E_NOMEM;
		pythreads_name_all(d->p, d->ts, d->nts, d->tnames, NULL);
		for (size_t i = 0; i < d->nts; i++)     /* threading's name, else the kernel's comm */
			if (!d->tnames[i][0] && d->ts[i].tid)
				proc_thread_comm(d->p->pid, d->ts[i].tid, d->tnames[i], sizeof(d->tnames[i]));
		for (size_t i = 0; i < d->g.n; i++)
			aio_task_name(d->p, d->g.tasks[i].name, d->names[i], sizeof(d->names[i]));
	}
	return err;
}

static void print_all(struct adump *d, bool loaded)
{
	put_header(d, loaded);
	if (d->json) {
		for (size_t i = 0; i < d->g.n; i++)
			task_json(d, i, i == 0);
	} else {
		tasks_text(d);
	}
	put_stats(d);
}

int dump_async(struct pyproc *p, FILE *o, bool json)
{
	struct adump d = { .p = p, .o = o, .json = json };
	int err, found;

	remote_invalidate_all(p->r);
	found = find_layout(&d);
	err = found == -PBP_E_NOENT ? 0 : found;
	if (!err)
		err = aio_graph_init(&d.g);
	if (!err && found == 0)
		err = collect(&d);
	if (!err)
		print_all(&d, found == 0);
	aio_graph_free(&d.g);
	free(d.ts);
	free(d.tnames);
	free(d.names);
	return err;
}
