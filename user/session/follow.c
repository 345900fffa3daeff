/* SPDX-License-Identifier: MIT */
/*
 * --subprocesses: the process tree under the launched command (or the -p
 * processes), as the kernel reports it (PBP_EV_FORK, _EXEC, _EXIT). A
 * child forked from a Python target is profiled at once with what is known
 * of its parent; one that execs is looked at as a launched command is; one
 * that is not Python (a shell) is followed for its own children only.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/run.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/jsonw.h"
#include "core/text.h"
#include "cpython/process.h"
#include "proc/procfs.h"
#include "sample/sampler.h"
#include "sample/target.h"

/* An exited target is dropped this long after its exit: its last samples are named first. */
#define GONE_GRACE_NS 500000000ull

/* Most recent first: a pid reused later is the live one. */
struct proc_note *follow_note_of(struct session *r, pid_t pid)
{
	for (int i = r->nnotes; i-- > 0;)
		if (r->notes[i].pid == pid)
			return &r->notes[i];
	return NULL;
}

void follow_add(struct session *r, pid_t pid, pid_t parent, bool root)
{
	struct proc_note *n;

	if (root && sampler_follow(r->c.smp, pid) != 0)
		return;
	if (r->nnotes >= MAX_PROC_NOTES) {
		r->unnoted++;
		return;
	}
	n = &r->notes[r->nnotes++];
	memset(n, 0, sizeof(*n));
	n->pid = pid;
	n->parent = parent;
	proc_thread_comm(pid, pid, n->comm, sizeof(n->comm));
}

/* The parent's interpreter, layout and code objects are the child's: no discovery. */
void follow_fork(struct session *r, pid_t pid, pid_t parent)
{
	struct target *pt = run_target_of(r, parent);
	struct pyproc *p = NULL;
	struct proc_note *n;

	follow_add(r, pid, parent, false);
	if (!pt || !pt->alive || run_target_of(r, pid))
		return;
	if (pyproc_fork(pt->p, pid, &run_target_limits, &p) != 0) {
		pyproc_close(p);
		p = NULL;
	}
	if (!p || !run_add_target(r, pid, p)) {
		sampler_del_proc(r->c.smp, pid);    /* the kernel's copy of the parent's entry */
		return;
	}
	n = follow_note_of(r, pid);
	if (n)
		n->python = true;
}

/* Samples a target's tick put in the profile (wall and gil modes). */
void follow_counted(struct session *r, pid_t pid, uint64_t n)
{
	struct proc_note *pn = n ? follow_note_of(r, pid) : NULL;

	if (pn)
		pn->samples += n;
}

/* The launched command or a -p process: seeded by us, not forked under our eyes. */
static bool is_root(const struct proc_note *n)
{
	return n->parent == 0;
}

void follow_exit(struct session *r, pid_t pid)
{
	struct proc_note *n = follow_note_of(r, pid);
	struct target *t = run_target_of(r, pid);

	if (n && !n->gone_ns)
		n->gone_ns = mono_ns();
	if (t)
		t->alive = false;
	if (!r->alive_timer)
		return;
	/* A root's exit may end the run: now. A target's slot is freed after the grace. */
	if (n && is_root(n))
		r->alive_timer->next = TIMER_NOW;
	else if (t && r->alive_timer->next > mono_ns() + GONE_GRACE_NS)
		r->alive_timer->next = mono_ns() + GONE_GRACE_NS;
}

/* The exit event comes before the process is a zombie: it counts as gone from then. */
static bool root_alive(struct session *r, pid_t pid)
{
	struct proc_note *n = follow_note_of(r, pid);

	return !(n && n->gone_ns) && (pid == r->child || pid_alive(pid));
}

bool follow_roots_alive(struct session *r)
{
	if (r->o.cmd)
		return r->child != 0 && root_alive(r, r->child);
	for (int i = 0; i < r->o.npids; i++)
		if (root_alive(r, r->o.pids[i]))
			return true;
	return false;
}

int follow_live(const struct session *r)
{
	int n = 0;

	for (int i = 0; i < r->nnotes; i++)
		n += !r->notes[i].gone_ns;
	return n;
}

/*
 * A target gone for a while, and whose samples have all been read: its slot
 * is freed (its samples stay in the profile). The samples of a storm of
 * short-lived children can wait in the ring for seconds while the forks
 * are taken in; dropped before they are read, they would be lost.
 */
bool follow_drop_gone(struct session *r, struct target *t, uint64_t now)
{
	struct proc_note *n = follow_note_of(r, t->pid);

	if (n && !n->gone_ns)
		n->gone_ns = now;       /* found gone before its exit event was read */
	if (n && (now - n->gone_ns < GONE_GRACE_NS || n->gone_ns >= sampler_read_upto(r->c.smp)))
		return false;
	run_drop_target(r, t);
	return true;
}

/* ------------------------------------------------------------ -p --subprocesses */

/* A descendant running already: followed from now on, and profiled if it is Python. */
static void follow_running(struct session *r, pid_t pid, pid_t parent)
{
	struct pyproc *p = NULL;
	struct proc_note *n;

	follow_add(r, pid, parent, true);
	n = follow_note_of(r, pid);
	if (!n || n->pid != pid)
		return;
	n->parent = parent;
	if (run_open(r, pid, &run_target_limits, &p) != 0) {
		pyproc_close(p);
		return;
	}
	if (!run_add_target(r, pid, p))
		return;
	n->python = true;
}

static bool followed(void *ctx, pid_t pid)
{
	return follow_note_of(ctx, pid) != NULL;
}

static bool follow_found(void *ctx, pid_t pid, pid_t ppid)
{
	follow_running(ctx, pid, ppid);
	return true;
}

/*
 * The tree under the -p processes as it is now, read once: later children
 * are the kernel's to report. A process is taken when its parent is.
 */
void follow_existing(struct session *r)
{
	for (int i = 0; i < r->o.npids; i++) {
		struct proc_note *pn;

		follow_add(r, r->o.pids[i], 0, true);
		if ((pn = follow_note_of(r, r->o.pids[i])) != NULL)
			pn->python = run_target_of(r, r->o.pids[i]) != NULL;
	}
	proc_descendants(&(struct proc_descent){ followed, follow_found, r });
}

/* ------------------------------------------------------------ summary */

static int by_samples(const void *a, const void *b)
{
	const struct proc_note *x = *(const struct proc_note *const *)a;
	const struct proc_note *y = *(const struct proc_note *const *)b;
	uint64_t sx = x->samples + x->lost, sy = y->samples + y->lost;

	return sx < sy ? 1 : sx > sy ? -1 : (x->pid > y->pid) - (x->pid < y->pid);
}

#define SUMMARY_PROCS 20

/* The processes profiled, busiest first, and the samples of processes not known in time. */
void follow_summary(const struct session *r)
{
	const struct proc_note **v = malloc(sizeof(*v) * (size_t)(r->nnotes ? r->nnotes : 1));
	int n = 0, py = 0, shown = 0;
	uint64_t lost = 0;

	if (!v)
		return;
	for (int i = 0; i < r->nnotes; i++) {
		py += r->notes[i].python;
		lost += r->notes[i].lost;
		if (r->notes[i].python || r->notes[i].samples || r->notes[i].lost)
			v[n++] = &r->notes[i];
	}
	qsort(v, (size_t)n, sizeof(*v), by_samples);
	fprintf(stderr, "pybpfprof: %d processes followed (%llu more not noted), %d profiled as Python\n",
		r->nnotes, (unsigned long long)r->unnoted, py);
	for (int i = 0; i < n && shown < SUMMARY_PROCS; i++, shown++) {
		fprintf(stderr, "pybpfprof:   pid %d (", (int)v[i]->pid);
		text_put(stderr, v[i]->comm, TEXT_PLAIN);   /* comm: the process chose it */
		if (v[i]->parent)
			fprintf(stderr, ", child of %d", (int)v[i]->parent);
		fprintf(stderr, "): %llu samples", (unsigned long long)v[i]->samples);
		if (v[i]->lost)
			fprintf(stderr, ", %llu lost", (unsigned long long)v[i]->lost);
		fputc('\n', stderr);
	}
	if (n > shown)
		fprintf(stderr, "pybpfprof:   ... and %d more processes\n", n - shown);
	if (lost)
		fprintf(stderr, "pybpfprof: warning: %llu samples lost: their process was gone, or not "
			"known yet, when they were read\n", (unsigned long long)lost);
	free(v);
	follow_warn_full(r);
}

/* Children the kernel could not follow: its table of the tree's live processes was full. */
void follow_warn_full(const struct session *r)
{
	uint64_t st[PBP_STAT__COUNT];

	sampler_stats(r->c.smp, st);
	if (st[PBP_STAT_FOLLOW_FULL])
		fprintf(stderr, "pybpfprof: warning: %llu processes not followed: the tree had %d live "
			"processes already\n", (unsigned long long)st[PBP_STAT_FOLLOW_FULL],
			PBP_MAX_FOLLOWED);
}

/* --stats=json: "followed" (the tree's processes noted) and "not_followed". */
void follow_json(struct jsonw *w, const struct session *r)
{
	uint64_t st[PBP_STAT__COUNT];

	sampler_stats(r->c.smp, st);
	jw_arr(w, "followed");
	for (int i = 0; i < r->nnotes; i++) {
		const struct proc_note *n = &r->notes[i];

		jw_obj(w, NULL);
		jw_int(w, "pid", n->pid);
		jw_int(w, "parent", n->parent);
		jw_str(w, "comm", n->comm);
		jw_bool(w, "python", n->python);
		jw_u64(w, "samples", n->samples);
		jw_u64(w, "lost", n->lost);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_u64(w, "not_followed", st[PBP_STAT_FOLLOW_FULL] + r->unnoted);
}
