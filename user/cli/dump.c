/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof dump`: every thread's stack, read once from outside without
 * stopping the target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "cli/dump.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/limits.h"
#include "core/text.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/stack.h"
#include "cpython/thread.h"
#include "cpython/threadname.h"
#include "proc/procfs.h"
#include "proc/remote.h"


struct dump_thread {
	struct pythread t;
	char name[64];
	char state;             /* from /proc: R, S, D, ... */
	bool holds_gil;
	struct pbp_frame *frames;
	size_t nframes;
	size_t elided;          /* frames left out after the first nframes - nframes / 2 */
	int err;                /* the walk failed part way: frames are what was read */
	bool torn;              /* no two reads agreed: the frames may mix instants */
};

/*
 * A thread running while it is read can return from frames the walk is
 * following: on 3.6-3.10 a freed frame object goes back to a free list,
 * and its f_back leads elsewhere (a stack that ends inside a recursion,
 * with no <module>). Its stack is read until two reads in a row agree, as
 * a sleeping thread's do at once; at most this many, and for this long.
 */
#define DUMP_READS 64
#define DUMP_READ_NS 100000000ull
#define TORN_TEXT "the stack changed under every read: frames may be missing or from another instant"

static void print_frame_text(FILE *o, const char *name, const char *file, int line)
{
	fputs("    ", o);
	text_put(o, name, TEXT_PLAIN);
	fputs(" (", o);
	text_put(o, file, TEXT_PLAIN);
	if (line >= 0)
		fprintf(o, ":%d", line);
	fputs(")\n", o);
}

static void print_frame_json(FILE *o, const char *name, const char *file, int line, bool first)
{
	fputs(first ? "\n        {" : ",\n        {", o);
	fputs("\"function\": ", o);
	text_put_quoted(o, name, TEXT_JSON);
	fputs(", \"file\": ", o);
	text_put_quoted(o, file, TEXT_JSON);
	fprintf(o, ", \"line\": %d}", line);
}

/* A stack deeper than PBP_MAX_DEPTH: where its frames were left out, and how many. */
static size_t elided_after(const struct dump_thread *d)
{
	return d->elided ? d->nframes - d->nframes / 2 : d->nframes;
}

static void print_frames(FILE *o, struct pyproc *p, const struct dump_thread *d, bool json)
{
	for (size_t i = 0; i < d->nframes; i++) {
		int err;
		const struct codeinfo *ci = codecache_get(p->codes, p, d->frames[i].code, &d->frames[i], &err);
		const char *name = ci ? ci->name : "<unreadable>";
		const char *file = ci ? ci->file : "<unreadable>";
		int line = ci ? frame_line(p, ci, d->frames[i].instr) : -1;

		if (!json && d->elided && i == elided_after(d)) {
			char buf[64];

			fprintf(o, "    %s\n", elided_name(buf, sizeof(buf), d->elided));
		}
		if (json)
			print_frame_json(o, name, file, line, i == 0);
		else
			print_frame_text(o, name, file, line);
	}
}

static void print_thread(FILE *o, struct pyproc *p, const struct dump_thread *d, bool json, bool first)
{
	/* The kernel's R in /proc: on a CPU, or ready and waiting for one; /proc does not tell which. */
	bool oncpu = d->state == 'R';

	if (json) {
		fprintf(o, "%s\n    {\"tid\": %d, ", first ? "" : ",", (int)d->t.tid);
		if (d->t.ns_tid)
			fprintf(o, "\"ns_tid\": %d, ", (int)d->t.ns_tid);
		fprintf(o, "\"interpreter\": %lld, \"name\": ", (long long)d->t.interp_id);
		text_put_quoted(o, d->name, TEXT_JSON);
		/* A free-threaded build has no GIL to hold: null, not false. */
		fprintf(o, ", \"on_cpu\": %s, \"holds_gil\": %s, \"state\": \"%c\", \"error\": ",
			oncpu ? "true" : "false", p->v.free_threaded ? "null" : d->holds_gil ? "true" : "false",
			d->state);
		if (d->err)
			text_put_quoted(o, pbp_strerror(d->err), TEXT_JSON);
		else if (d->torn)
			text_put_quoted(o, TORN_TEXT, TEXT_JSON);
		else
			fputs("null", o);
		fprintf(o, ", \"consistent\": %s", d->torn ? "false" : "true");
		if (d->elided)
			fprintf(o, ", \"elided\": {\"count\": %zu, \"after\": %zu}", d->elided,
				elided_after(d));
		else
			fputs(", \"elided\": null", o);
		fputs(", \"frames\": [", o);
		print_frames(o, p, d, true);
		fputs("]}", o);
		return;
	}
	fprintf(o, "Thread %d ", (int)d->t.tid);
	if (d->t.ns_tid)
		fprintf(o, "(%d in its namespace) ", (int)d->t.ns_tid);
	fputc('"', o);
	text_put(o, d->name, TEXT_PLAIN);
	/* '?': its /proc entry went while it was read (it ended), or no thread id was known. */
	fprintf(o, "\" (interpreter %lld, %s, %s)%s%s\n", (long long)d->t.interp_id,
		oncpu ? "running or runnable" : d->state != '?' ? "off CPU" : d->t.tid ? "ended while read" :
		"state unknown",
		p->v.free_threaded ? "free-threaded" : d->holds_gil ? "holds the GIL" : "no GIL",
		d->err ? ": stack incomplete: " : d->torn ? ": stack not consistent: " : "",
		d->err ? pbp_strerror(d->err) : d->torn ? TORN_TEXT : "");
	print_frames(o, p, d, false);
	if (d->nframes == 0 && !d->err)
		fputs("    (no Python frames)\n", o);
}


/*
 * Two reads agree when every frame is the same; the innermost may have
 * moved on within its function (a thread spinning in a loop never stops
 * at one instruction), the frames it returns to cannot have without
 * returning.
 */
static bool same_read(const struct pbp_frame *a, size_t na, size_t ea, int erra,
		      const struct pbp_frame *b, size_t nb, size_t eb, int errb)
{
	if (na != nb || ea != eb || erra != errb)
		return false;
	if (na == 0)
		return true;
	return a[0].code == b[0].code && a[0].firstlineno == b[0].firstlineno && a[0].code_key == b[0].code_key &&
	       memcmp(a + 1, b + 1, (na - 1) * sizeof(*a)) == 0;
}

/* One read of the thread's stack, from its current frame, none of it from an earlier read. */
static int read_once(struct pyproc *p, const struct dump_thread *d, struct pbp_frame *out,
		     size_t *n, size_t *elided)
{
	uint64_t frame = d->t.frame;
	int err = 0;

	*n = *elided = 0;
	remote_invalidate_all(p->r);
	if (d->t.tstate)
		err = pythread_frame(p, d->t.tstate, &frame);
	if (!err && frame)
		err = stack_walk(p, frame, out, PBP_MAX_DEPTH, n, elided, NULL);
	return err;
}

/*
 * The thread's frames, into a copy of their own (most stacks are short, a
 * few very deep): read until two whole reads agree, else the last one,
 * torn, or failed part way (d->err).
 */
static void walk(struct pyproc *p, struct dump_thread *d, struct pbp_frame *scratch,
		 struct pbp_frame *prev)
{
	uint64_t until = mono_ns() + DUMP_READ_NS;
	size_t pn = 0, pe = 0;
	int perr = 0;

	d->torn = true;
	for (int i = 0; i < DUMP_READS && d->torn; i++) {
		d->err = read_once(p, d, scratch, &d->nframes, &d->elided);
		if (i && !d->err && same_read(scratch, d->nframes, d->elided, d->err, prev, pn, pe, perr))
			d->torn = false;
		else if (i && mono_ns() > until)
			break;
		memcpy(prev, scratch, d->nframes * sizeof(*prev));
		pn = d->nframes, pe = d->elided, perr = d->err;
	}
	if (d->err)
		d->torn = false;        /* the error says it: the walk failed part way */
	d->frames = malloc((d->nframes ? d->nframes : 1) * sizeof(*d->frames));
	if (!d->frames) {
		d->nframes = d->elided = 0;
		d->err = -PBP_E_NOMEM;
		return;
	}
	memcpy(d->frames, scratch, d->nframes * sizeof(*d->frames));
}

/*
 * The thread's state, name and GIL, read for every thread before any stack
 * is walked: the states then belong to one instant as nearly as reads in
 * turn can (with a GIL, the holder changes every few milliseconds, and a
 * walk between two threads' states could see it pass from one not yet
 * read to one read already, and no thread running). The states come first,
 * one /proc read each; then each interpreter's GIL is read once, for all its
 * threads (read per thread, it passed between reads and two threads held
 * it), and its holder's state again beside it; the names last.
 */
static void collect_states(struct pyproc *p, struct dump_thread *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i].state = d[i].t.tid ? proc_thread_state(p->pid, d[i].t.tid) : '?';
}

static void collect_gil(struct pyproc *p, struct dump_thread *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct gilstate g;
		size_t k;

		for (k = 0; k < i && d[k].t.interp != d[i].t.interp; k++)
			;
		if (k < i)
			continue;       /* its interpreter's GIL was read for thread k */
		if (pygil_read(p, d[i].t.interp, &g) != 0 || !g.known)
			continue;
		for (size_t j = i; j < n; j++)
			if (d[j].t.interp == d[i].t.interp &&
			    (d[j].holds_gil = pygil_holds(&g, d[j].t.tstate, d[j].state == 'R')) && d[j].t.tid)
				/* read again beside the GIL: it may have taken it since its state was read */
				d[j].state = proc_thread_state(p->pid, d[j].t.tid);
	}
}

static void collect_name(struct pyproc *p, struct dump_thread *d, const char *pyname)
{
	if (d->t.tid)
		proc_thread_comm(p->pid, d->t.tid, d->name, sizeof(d->name));
	if (pyname)     /* threading's name when known, else the kernel's comm */
		snprintf(d->name, sizeof(d->name), "%s", pyname);
	else if (d->t.tid && d->t.tid == p->pid)
		snprintf(d->name, sizeof(d->name), "MainThread");   /* as a recording names it */
	utf8_scrub(d->name);    /* comm is cut at 15 bytes, maybe inside a character */
}

int dump_process(struct pyproc *p, FILE *o, bool json)
{
	struct pythread *ts = calloc(PBP_MAX_THREADS, sizeof(*ts));
	struct pbp_frame *scratch = malloc(PBP_MAX_DEPTH * sizeof(*scratch));
	struct pbp_frame *prev = malloc(PBP_MAX_DEPTH * sizeof(*prev));
	struct dump_thread *d;
	char (*names)[PBP_NAME_LEN] = NULL;
	size_t n = 0;
	int err;

	if (!ts || !scratch || !prev) {
		free(ts);
		free(scratch);
		free(prev);
		return -PBP_E_NOMEM;
	}
	remote_invalidate_all(p->r);
	err = pythreads_read(p, ts, PBP_MAX_THREADS, &n);
	d = calloc(n ? n : 1, sizeof(*d));
	if (!err && !d)
		err = -PBP_E_NOMEM;
	if (!err)
		names = calloc(n ? n : 1, sizeof(*names));
	if (names)
		pythreads_name_all(p, ts, n, names, NULL);
	for (size_t i = 0; !err && i < n; i++)
		d[i].t = ts[i];
	if (!err) {
		collect_states(p, d, n);
		collect_gil(p, d, n);
	}
	for (size_t i = 0; !err && i < n; i++)
		collect_name(p, &d[i], names && names[i][0] ? names[i] : NULL);
	for (size_t i = 0; !err && i < n; i++)
		if (d[i].t.frame)
			walk(p, &d[i], scratch, prev);
	if (!err && json) {
		fprintf(o, "{\"pid\": %d, ", (int)p->pid);
		if (p->tids)
			fprintf(o, "\"ns_pid\": %d, ", (int)p->ns_pid);
		fprintf(o, "\"version\": \"%s\", \"binary\": ", p->version);
		text_put_quoted(o, p->binary, TEXT_JSON);
		fputs(", \"threads\": [", o);
	} else if (!err) {
		fprintf(o, "Process %d", (int)p->pid);
		if (p->tids)
			fprintf(o, " (%d in its namespace)", (int)p->ns_pid);
		fputs(": ", o);
		text_put(o, p->binary, TEXT_PLAIN);
		fprintf(o, " (Python %s)\n", p->version);
	}
	for (size_t i = 0; !err && i < n; i++)
		print_thread(o, p, &d[i], json, i == 0);
	if (!err && json)
		fputs("\n]}\n", o);
	for (size_t i = 0; d && i < n; i++)
		free(d[i].frames);
	free(d);
	free(names);
	free(ts);
	free(scratch);
	free(prev);
	return err;
}
