/* SPDX-License-Identifier: MIT */
/*
 * Where what the kernel says (samples, forks, execs, exits, new threads)
 * meets the target table and the followed tree, and -a's discovery with
 * its filters: the one place that decides what becomes a target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "session/run.h"
#include "session/session.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/stagecpu.h"
#include "core/text.h"
#include "cpython/process.h"
#include "proc/cgroup.h"
#include "proc/discover.h"
#include "proc/procfs.h"
#include "proc/remote.h"
#include "sample/loop.h"
#include "sample/sampler.h"
#include "sample/target.h"

/*
 * A skip holds for the process it was made for: a pid reused by another
 * (a process forked with it, seen at its rename or at the agent's look) is
 * new to us. The old skip stays in the summary: it was true of its process.
 * A rename's event says whose it is (start: the low 32 bits of its start
 * time, 0 when not told): a skipped process renaming itself in a loop would
 * otherwise cost a read of /proc per rename, more than the loop can take in,
 * and -d and Ctrl-C wait for its storm to end.
 */
static bool skipped_as(const struct session *r, pid_t pid, uint32_t start)
{
	for (int i = 0; i < r->nskipped; i++) {
		if (r->skipped[i].pid != pid)
			continue;
		if (!start)
			start = (uint32_t)proc_start_time(pid);
		if (r->skipped[i].start == start)
			return true;
	}
	return false;
}

static bool was_skipped(const struct session *r, pid_t pid)
{
	return skipped_as(r, pid, 0);
}

/*
 * -a: a target gone frees its place; the first process --max-processes
 * left out that is still there is looked at again (the limit is on
 * processes at once, not on the run's).
 */
void run_give_place(struct session *r)
{
	for (int i = 0; i < r->nskipped;) {
		pid_t pid = r->skipped[i].pid;

		if (r->skipped[i].err != -PBP_E_LIMIT) {
			i++;
			continue;
		}
		memmove(&r->skipped[i], &r->skipped[i + 1], sizeof(*r->skipped) * (size_t)(r->nskipped - i - 1));
		r->nskipped--;
		if (pid_alive(pid) && run_queue_pending(r, pid, 0))
			return;
	}
}

/* Forget the skips that keep: err (0: every one), or pid's alone (pid > 0). */
static void unskip(struct session *r, pid_t pid, int err)
{
	int k = 0;

	for (int i = 0; i < r->nskipped; i++)
		if (!((pid > 0 && r->skipped[i].pid == pid) || (pid <= 0 && r->skipped[i].err == err)))
			r->skipped[k++] = r->skipped[i];
	r->nskipped = k;
}

/*
 * A long run (the agent) looks again: processes skipped because
 * --max-processes was reached may fit now, and a process -a missed (a
 * child forked without exec) is found.
 */
void session_rediscover(struct session *r)
{
	unskip(r, 0, -PBP_E_LIMIT);
	run_discover(r);
}

/* A Python process -a could not profile: said once, in the summary. */
static void skip(struct session *r, pid_t pid, int err, const struct pyproc *p)
{
	struct skipped *k;

	if (r->nskipped >= MAX_SKIPPED || was_skipped(r, pid))
		return;
	k = &r->skipped[r->nskipped++];
	k->pid = pid;
	k->err = err;
	k->start = (uint32_t)proc_start_time(pid);
	proc_thread_comm(pid, pid, k->comm, sizeof(k->comm));
	k->version[0] = '\0';
	k->mismatch = NULL;
	if ((-err == PBP_E_VERSION || -err == PBP_E_FREETHREADED || -err == PBP_E_NOGIL ||
	     (-err == PBP_E_CORRUPT && p && p->mismatch)) && p && p->version[0])
		snprintf(k->version, sizeof(k->version), "%s", p->version);
	if (-err == PBP_E_CORRUPT && p && p->mismatch)     /* as -p says it (report.c) */
		k->mismatch = p->mismatch;
}

/* comm: the process's name as the kernel gave it at its exec; NULL: read from /proc. */
static bool wanted(struct session *r, pid_t pid, const char *comm)
{
	struct proc_filter f = {
		.comm_re = r->o.comm_re ? &r->o.comm_regex : NULL,
		.cgroup_prefix = r->o.cgroup,
		.container_prefix = r->o.container,
		.exclude = r->o.excluded,
		.nexclude = (size_t)r->o.nexcluded,
		.only = r->o.npids ? r->o.pids : NULL,
		.nonly = (size_t)r->o.npids,
	};
	struct cgroup_info cg;
	char name[32] = "";

	if (pid == getpid())
		return false;
	memset(&cg, 0, sizeof(cg));
	if ((r->o.cgroup || r->o.container) && cgroup_read(pid, &cg) != 0)
		return false;
	/*
	 * only for --comm: every exec and fork on a node comes here, and /proc
	 * is an open, a read, a close; an exec's event carries the name.
	 */
	if (r->o.comm_re && !comm)
		proc_thread_comm(pid, pid, name, sizeof(name));
	return proc_filter_match(&f, pid, comm ? comm : name, &cg);
}

static struct exec_note *exec_note_of(struct session *r, pid_t pid)
{
	for (int i = r->nexecs; i-- > 0;)
		if (r->execs[i].pid == pid)
			return &r->execs[i];
	return NULL;
}

static void note_exec(struct session *r, pid_t pid)
{
	struct exec_note *n;

	if (r->nexecs >= MAX_EXEC_NOTES)
		return;
	n = &r->execs[r->nexecs++];
	memset(n, 0, sizeof(*n));
	n->pid = pid;
	n->at_ns = mono_ns();
}

/* The end of the search for a target's new program: profiled again (err 0), or why not. */
static void exec_done(struct session *r, pid_t pid, int err, const struct pyproc *p)
{
	struct exec_note *n = exec_note_of(r, pid);

	if (!n || n->back_ns || n->err)
		return;
	n->err = err;
	if (!err)
		n->back_ns = mono_ns();
	if (p && p->version[0])
		snprintf(n->version, sizeof(n->version), "%s", p->version);
}

/*
 * -p or launch mode: a target that exec'd, profiled again once its new
 * program is Python; with --subprocesses, a process of the tree that
 * exec'd, or the launched command, profiled once it is Python.
 */
static bool reattach(struct session *r, pid_t pid)
{
	struct pyproc *p = NULL;
	struct target *t = NULL;
	struct proc_note *pn;
	int err;

	if (run_target_of(r, pid))
		return true;    /* the exec event and a look still due both found it */
	err = run_open(r, pid, &run_target_limits, &p);
	if (r->o.follow && pid == r->child && err != -PBP_E_NOTPY && err != -PBP_E_FAULT &&
	    err != -PBP_E_GONE && err != -PBP_E_NOENT)
		r->launch_err = err;    /* 0, or why the command cannot be profiled (its version) */
	if (r->o.follow && pid == r->child)
		run_keep_launch_version(r, p, err);

	if (err == -PBP_E_NOTPY || err == -PBP_E_FAULT) {
		pyproc_close(p);
		return false;   /* not (yet) Python */
	}
	if (!err && !(t = run_place_target(r, pid, p)))
		err = -PBP_E_LIMIT;
	exec_done(r, pid, err, p);
	if (err) {
		pyproc_close(p);
		return true;
	}
	if (run_start_target(r, t) != 0) {
		struct exec_note *n = exec_note_of(r, pid);

		if (n)
			n->back_ns = 0, n->err = -PBP_E_BPF;
		run_drop_target(r, t);
	} else if ((pn = follow_note_of(r, pid)) != NULL) {
		pn->python = true;
	}
	return true;
}

/* -a: a pid not known yet (a target, or skipped) that the filters let through. */
static bool new_and_wanted(struct session *r, pid_t pid, const char *comm, uint32_t start)
{
	return !run_target_of(r, pid) && !skipped_as(r, pid, start) && wanted(r, pid, comm);
}

static bool worth_a_look(void *ctx, pid_t pid)
{
	return new_and_wanted(ctx, pid, NULL, 0);
}

/* consider(), once worth_a_look said yes. */
static bool take_candidate(struct session *r, pid_t pid)
{
	struct pyproc *p = NULL;
	struct target *t = NULL;
	int err;

	err = run_open(r, pid, &run_host_limits, &p);
	if (err == -PBP_E_NOTPY || err == -PBP_E_FAULT) {
		pyproc_close(p);
		return false;
	}
	if (err && err != -PBP_E_NOENT && err != -PBP_E_GONE)
		skip(r, pid, err, p);
	if (!err && !(t = run_place_target(r, pid, p)))
		skip(r, pid, -PBP_E_LIMIT, p);
	if (err || !t) {
		pyproc_close(p);
		return true;
	}
	if (run_start_target(r, t) != 0) {
		skip(r, pid, -PBP_E_BPF, p);
		run_drop_target(r, t);
	}
	return true;
}

/*
 * -a: profile pid if it is a Python process the filters let through.
 * Returns false when it is not Python (yet): just exec'd, or an embedding
 * program that loads libpython later.
 */
static bool consider(struct session *r, pid_t pid)
{
	return !worth_a_look(r, pid) || take_candidate(r, pid);
}

/*
 * A look at all of /proc (at the start, and the agent's each minute): the
 * targets and skipped pids are passed over before their maps are read, so
 * a node's idle processes cost it nothing once found.
 */
void run_discover(struct session *r)
{
	pid_t *pids = malloc(sizeof(*pids) * MAX_DISCOVER);
	size_t n = 0;

	stagecpu_enter(STAGE_DISCOVERY);
	if (pids && discover_pythons(pids, MAX_DISCOVER, &n, worth_a_look, r) >= 0)   /* 1: more than fit */
		for (size_t i = 0; i < n; i++)
			take_candidate(r, pids[i]);
	free(pids);
	stagecpu_leave();
	r->trim_due = true;     /* what opening them took (ELF reads, scratch) is given back */
}

bool run_pending(void *ctx, struct timer *t, uint64_t now)
{
	struct session *r = ctx;

	(void)t;
	stagecpu_enter(STAGE_DISCOVERY);
	for (int i = 0; i < r->npending;) {
		struct pending p = r->pending[i];

		if (p.next_ns > now) {
			i++;
			continue;
		}
		r->pending[i] = r->pending[--r->npending];
		if (r->o.all) {
			/* consider() finds a process gone by itself: /proc is read once less per exec on the node. */
			if (!consider(r, p.pid) && pid_alive(p.pid))
				run_queue_pending(r, p.pid, p.tries + 1);
		} else if (!pid_alive(p.pid)) {
			exec_done(r, p.pid, -PBP_E_NOTPY, NULL);    /* it ended as what it was */
		} else if (!reattach(r, p.pid) && !run_queue_pending(r, p.pid, p.tries + 1)) {
			exec_done(r, p.pid, -PBP_E_NOTPY, NULL);
		}
	}
	stagecpu_leave();
	return true;
}

void run_on_sample(void *ctx, const struct pbp_sample *ks)
{
	struct session *r = ctx;
	struct target *t = run_target_of(r, (pid_t)ks->tgid);
	uint64_t before = agg_total(r->c.agg);
	struct proc_note *n;

	if (!r->o.follow) {
		if (t && t->alive)
			target_on_sample(&r->c, t, ks);
		else
			r->unowned++;
		return;
	}
	/* A child's first samples can come before its fork event was read. */
	if (!t) {
		sampler_drain_events(r->c.smp);
		t = run_target_of(r, (pid_t)ks->tgid);
	}
	n = follow_note_of(r, (pid_t)ks->tgid);
	/* An exited target's last samples are named from what is known of it still. */
	if (t)
		target_on_sample(&r->c, t, ks);
	else
		r->unowned++;
	/* What the profile got of it: a sample with no Python frame is not there. */
	if (n && t)
		n->samples += agg_total(r->c.agg) - before;
	else if (n)
		n->lost++;
}

/* Execs of the launched command and -p targets are said in the summary; of the tree's others, not. */
static bool exec_noted(struct session *r, pid_t pid)
{
	struct proc_note *n = follow_note_of(r, pid);

	return !r->o.follow || (n && !n->parent);
}

/*
 * -a: a target's child forked without exec runs its parent's interpreter at
 * the same addresses: started at once from the parent's state (layout, code
 * objects), sampled from its first tick, as --subprocesses does. false: not
 * so (the parent is no target, a filter says no, no room): looked at later.
 */
static bool adopt_fork(struct session *r, pid_t pid, pid_t parent)
{
	struct target *pt = run_target_of(r, parent);
	struct pyproc *p = NULL;

	if (!pt || !pt->alive || run_target_of(r, pid) || was_skipped(r, pid) || !wanted(r, pid, NULL))
		return false;
	if (pyproc_fork(pt->p, pid, &run_host_limits, &p) != 0) {
		pyproc_close(p);
		return false;
	}
	return run_add_target(r, pid, p) != NULL;
}

void run_on_proc_event(void *ctx, uint32_t kind, pid_t pid, pid_t parent, const char *comm, uint32_t start)
{
	struct session *r = ctx;
	struct target *t;
	struct proc_note *fn = r->o.follow ? follow_note_of(r, pid) : NULL;

	/*
	 * Counted in naming, with the samples taken in beside it: most events
	 * only queue a pid, and a node's churn sends many; what they lead to
	 * (run_pending) is discovery.
	 */
	if (fn && kind == PBP_EV_EXEC) {
		if (comm && comm[0])    /* the event's: the new program's name, no /proc read */
			snprintf(fn->comm, sizeof(fn->comm), "%s", comm);
		else
			proc_thread_comm(pid, pid, fn->comm, sizeof(fn->comm));
		/*
		 * The launched command's exec, which launch_start waited for
		 * before it looked: a target found then is the new program
		 * already, not one to drop and find again (nor an exec to
		 * report in the summary).
		 */
		if (pid == r->child && r->launch_exec_due) {
			r->launch_exec_due = false;
			if (run_target_of(r, pid))
				return;
		}
		/* Python before it only if it was sampled so (a fork about to exec was not): looked at again. */
		fn->python = fn->samples > 0;
	}
	if (kind == PBP_EV_FORK && r->o.follow) {
		follow_fork(r, pid, parent);
	} else if (kind == PBP_EV_FORK) {
		unskip(r, pid, 0);      /* -a: a target's fork, new to us as an exec is */
		if (!adopt_fork(r, pid, parent))
			run_queue_pending(r, pid, 0);
	} else if (kind == PBP_EV_EXIT && fn) {
		exec_done(r, pid, -PBP_E_NOTPY, NULL);     /* it exec'd and ended as what it became */
		follow_exit(r, pid);
	} else if (kind == PBP_EV_EXEC) {
		/* An exec replaces the program: a target that execs is a new process to us. */
		if ((t = run_target_of(r, pid)) != NULL)
			run_drop_target(r, t);
		unskip(r, pid, 0);      /* nor was the program skipped before it (or a reused pid's) */
		if (r->o.all) {
			/*
			 * The filters asked now, not at the look 20 ms later: the
			 * name and cgroup are the new program's already, and a
			 * node's execs that no filter lets through then queue no
			 * look, nor wake the loop for one. The name is the
			 * event's: a look at /proc for each would be most of
			 * what a node's churn costs.
			 */
			if (new_and_wanted(r, pid, comm && comm[0] ? comm : NULL, 0))
				run_queue_pending(r, pid, 0);
		} else if (t || fn) {
			if (t && exec_noted(r, pid))
				note_exec(r, pid);
			if (!reattach(r, pid))
				run_queue_pending(r, pid, 0);
		}
	} else if (kind == PBP_EV_EXIT && (t = run_target_of(r, pid)) != NULL) {
		t->alive = false;
		if (r->alive_timer)
			r->alive_timer->next = TIMER_NOW;
	} else if (kind == PBP_EV_RENAME && r->o.all) {
		/* A name judged once at exec may match now: asked again, looked at as an exec is. */
		if (new_and_wanted(r, pid, comm && comm[0] ? comm : NULL, start))
			run_queue_pending(r, pid, 0);
	} else if (kind == PBP_EV_CGROUP && (t = run_target_of(r, pid)) != NULL) {
		t->labels_moved = true;         /* made again at the next window, if it is sampled */
	} else if (kind == PBP_EV_THREAD && (t = run_target_of(r, pid)) != NULL) {
		uint64_t now = mono_ns();

		if (!t->rescan_soon)
			t->rescan_soon = now + NEW_THREAD_SOON_NS;
		t->rescan_later = now + NEW_THREAD_LATER_NS;
	}
}
