/* SPDX-License-Identifier: MIT */
/*
 * Interpreters, their thread states, and the GIL, read from the target.
 * Lists are walked with a bound: a corrupt or cyclic list ends the walk
 * with -PBP_E_CORRUPT instead of a hang; a list that changes under the walk
 * is read again (see pythreads_read()).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "cpython/thread.h"
#include "core/bytes.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "proc/pidns.h"
#include "proc/remote.h"

#define TS_READ_MAX 1024

/*
 * Before 3.11 a thread state holds only pthread_t, which on glibc is the
 * address of the thread's struct pthread; the kernel tid sits inside it at
 * an offset that depends on glibc's build. Find it by looking for our own
 * tid in two threads of ours at once (the target uses the same glibc unless
 * it is in a container, and the caller checks the tid against /proc): one
 * alone could match another field, such as the upper half of a pointer
 * (0x55xx, 0x7fxx), whenever its tid happens to have that value; the same
 * field cannot hold two different tids.
 */
static long tid_offset = -1;

struct tid_probe {
	const uint8_t *other;   /* the creating thread's struct pthread */
	pid_t other_tid;
};

static bool holds_tid(const uint8_t *pd, long off, pid_t tid)
{
	pid_t x;

	memcpy(&x, pd + off, sizeof(x));
	return x == tid;
}

static void *find_tid_offset(void *arg)
{
	const struct tid_probe *pr = arg;
	const uint8_t *self = (const uint8_t *)pthread_self();
	pid_t tid = gettid();

	for (long off = 0; off < 4096 && tid != pr->other_tid; off += 4) {
		if (holds_tid(self, off, tid) && holds_tid(pr->other, off, pr->other_tid)) {
			tid_offset = off;
			break;
		}
	}
	return NULL;
}

static void tid_offset_init(void)
{
	struct tid_probe pr = { (const uint8_t *)pthread_self(), gettid() };
	pthread_t t;

	if (pthread_create(&t, NULL, find_tid_offset, &pr) == 0)
		pthread_join(t, NULL);
}

static long pthread_tid_offset(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, tid_offset_init);
	return tid_offset;
}

static bool task_exists(pid_t pid, pid_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return stat(path, &st) == 0;
}

bool pythread_alive(const struct pyproc *p, pid_t tid)
{
	return tid > 0 && task_exists(p->pid, tid);
}

/* Our id of the thread the target calls tid in its own PID namespace; 0 if none. */
static pid_t our_tid(struct pyproc *p, pid_t tid)
{
	if (tid <= 0)
		return 0;
	if (p->tids)
		return tidmap_ours(p->tids, tid);
	return task_exists(p->pid, tid) ? tid : 0;
}

/* A word of the thread state copy ts; 0 for a field this version lacks or past the copy. */
static uint64_t ts_u64(const uint8_t *ts, uint32_t off)
{
	return off != PYVER_NOOFF && off + 8 <= TS_READ_MAX ? load_u64(ts, off) : 0;
}

/* The thread's kernel id in our namespace, and in its own (ns_tid) when that differs. */
static pid_t thread_tid(struct pyproc *p, const uint8_t *ts, pid_t *ns_tid)
{
	const struct pyver *v = &p->v;
	long off;
	pid_t tid = 0;

	if (v->ts_native_thread_id != PYVER_NOOFF) {
		tid = (pid_t)ts_u64(ts, v->ts_native_thread_id);
	} else if ((off = pthread_tid_offset()) >= 0) {
		uint64_t pth = ts_u64(ts, v->ts_thread_id);

		if (pth && remote_read(p->r, pth + (uint64_t)off, &tid, sizeof(tid)) != 0)
			tid = 0;
	}
	*ns_tid = p->tids && tid > 0 ? tid : 0;
	return our_tid(p, tid);
}

int pythread_frame(struct pyproc *p, uint64_t tstate, uint64_t *frame)
{
	const struct pbp_offsets *k = &p->v.k;
	int err = remote_ptr(p->r, tstate + k->ts_frame, frame);

	if (!err && *frame && k->cframe_current != PBP_NOOFF)
		err = remote_ptr(p->r, *frame + k->cframe_current, frame);
	return err;
}

static size_t ts_span(const struct pyver *v)
{
	uint32_t offs[] = { v->ts_next, v->ts_interp, v->ts_thread_id, v->ts_native_thread_id,
			    v->k.ts_frame };
	size_t end = 0;

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] != PYVER_NOOFF && offs[i] + 8 > end)
			end = offs[i] + 8;
	return end;
}

static int read_interp_threads(struct pyproc *p, uint64_t interp, struct pythread *out,
			       size_t max, size_t *n)
{
	const struct pyver *v = &p->v;
	uint8_t ts[TS_READ_MAX];
	uint64_t tstate;
	int64_t id = 0;
	size_t span = ts_span(v), walked = 0;
	int err;

	if (span > sizeof(ts))
		return -PBP_E_CORRUPT;
	err = remote_ptr(p->r, interp + v->is_threads_head, &tstate);
	/* 3.6's interpreters have no id: all are reported as 0. */
	if (!err && v->is_id != PYVER_NOOFF)
		err = remote_read(p->r, interp + v->is_id, &id, sizeof(id));
	for (; !err && tstate; walked++) {
		struct pythread *t;

		if (walked >= PBP_MAX_THREADS)
			return -PBP_E_CORRUPT;
		err = remote_read(p->r, tstate, ts, span);
		if (err)
			break;
		/* Freed and reused (or unmapped and garbage): no thread of this interpreter. */
		if (ts_u64(ts, v->ts_interp) != interp) {
			err = -PBP_E_FAULT;
			break;
		}
		if (*n < max) {
			t = &out[*n];
			t->tstate = tstate;
			t->interp = interp;
			t->interp_id = id;
			t->tid = thread_tid(p, ts, &t->ns_tid);
			t->ident = ts_u64(ts, v->ts_thread_id);
			err = pythread_frame(p, tstate, &t->frame);
			if (err)
				break;  /* left out: a thread whose frame cannot be read is on its way out */
			(*n)++;
		}
		tstate = ts_u64(ts, v->ts_next);
	}
	return err;
}

struct idkey {
	uint64_t key;
	size_t i;
};

static int idkey_cmp(const void *a, const void *b)
{
	const struct idkey *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Clear the tid (or the ident) of every state but the last one that has it. */
static void clear_dups(struct pythread *t, size_t n, bool tid, struct idkey *k)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t key = tid ? (uint64_t)t[i].tid : t[i].ident;

		if (key)
			k[m++] = (struct idkey){ key, i };
	}
	qsort(k, m, sizeof(*k), idkey_cmp);
	for (size_t i = 0; i + 1 < m; i++) {
		if (k[i].key != k[i + 1].key)
			continue;
		if (tid)
			t[k[i].i].tid = t[k[i].i].ns_tid = 0;
		else
			t[k[i].i].ident = 0;
	}
}

/*
 * A thread makes the state of each thread it starts. Up to 3.11 that state
 * holds the starter's thread_id (3.11: and native_thread_id) until the new
 * thread writes its own, one field after the other, and a state freed and
 * made again under the walk may show any mix of old and new. Such a state
 * is not the thread whose ids it shows: named and counted as it, it would
 * give the starter a second entry, or a new thread the starter's name. The
 * starter's own state is older, and states are added at the head of the
 * list: of the states of one interpreter that claim a tid (or an ident),
 * the last one walked keeps it, the others get 0, unknown.
 */
static void unbound_states(struct pythread *t, size_t n)
{
	struct idkey *k;

	if (n < 2)
		return;
	k = malloc(n * sizeof(*k));
	if (!k)
		return;
	clear_dups(t, n, true, k);
	clear_dups(t, n, false, k);
	free(k);
}

/* One walk of every interpreter's list; out[0..*n) is what was read before any error. */
static int walk_threads(struct pyproc *p, struct pythread *out, size_t max, size_t *n)
{
	uint64_t interp;
	int err = remote_ptr(p->r, p->runtime + p->v.rt_interpreters_head, &interp);

	*n = 0;
	for (size_t i = 0; !err && interp; i++) {
		size_t first = *n;

		if (i >= PBP_MAX_INTERPS)
			return -PBP_E_CORRUPT;
		err = read_interp_threads(p, interp, out, max, n);
		unbound_states(out + first, *n - first);
		if (!err)
			err = remote_ptr(p->r, interp + p->v.is_next, &interp);
	}
	return err;
}

/*
 * The lists change while they are read: a thread that exits frees its state,
 * maybe between reading the pointer to it and reading it, and the memory may
 * then be unmapped or hold anything (a next pointer into nowhere, even a
 * loop through a reused block). So a walk that faults or finds the list
 * corrupt is tried again from the start; a list that stays corrupt (a cycle,
 * more than PBP_MAX_THREADS entries) is reported as such, but one that keeps
 * faulting part way gives the threads read before the fault: those were
 * there, and the rest exited or is unreadable.
 */
#define WALK_TRIES 3

int pythreads_read(struct pyproc *p, struct pythread *out, size_t max, size_t *n)
{
	int err = 0;

	/* Threads seen by this walk were there before it: the map made now knows them. */
	if (p->tids && (err = tidmap_rebuild(p->tids, p->pid)) != 0)
		return err;
	for (int i = 0; i < WALK_TRIES; i++) {
		err = walk_threads(p, out, max, n);
		if (err != -PBP_E_FAULT && err != -PBP_E_CORRUPT)
			break;
	}
	return err == -PBP_E_FAULT && *n > 0 ? 0 : err;
}

int pygil_read(struct pyproc *p, uint64_t interp, struct gilstate *g)
{
	const struct pyver *v = &p->v;
	int err;

	memset(g, 0, sizeof(*g));
	/*
	 * 3.14t: a GIL struct exists but is off (enabled 0) unless an extension
	 * or PYTHON_GIL=1 turns it on; its locked word would read as "nobody
	 * holds it" and make every thread look GIL-less. Not read: unknown.
	 */
	if (v->free_threaded)
		return 0;
	if (v->rt_gil != PYVER_NOOFF) {
		g->addr = p->runtime + v->rt_gil;
		err = 0;
	} else if (p->gil_static) {
		g->addr = p->gil_static;       /* 3.6: statics, offsets from gil_locked */
		err = 0;
	} else if (v->is_ceval_gil != PYVER_NOOFF && interp) {
		err = remote_ptr(p->r, interp + v->is_ceval_gil, &g->addr);
	} else {
		return 0;
	}
	if (err)
		return err;
	return g->addr ? pygil_state(p, g->addr, g) : 0;
}

int pygil_state(struct pyproc *p, uint64_t addr, struct gilstate *g)
{
	int32_t locked = 0;
	int err;

	memset(g, 0, sizeof(*g));
	g->addr = addr;
	err = remote_read(p->r, addr + p->v.gil_locked, &locked, sizeof(locked));
	if (!err)
		err = remote_ptr(p->r, addr + p->v.gil_last_holder, &g->holder);
	if (err)
		return err;
	g->known = true;
	g->locked = locked != 0;
	g->uncreated = locked < 0;
	return 0;
}

/*
 * A GIL not created yet (locked -1: 3.6 makes it when a second thread
 * starts) has no holder: nobody holds it. The one thread running Python
 * counts as holding it while it runs (on a CPU, or preempted off one), as
 * 3.7+ holds the GIL it made at start, and not while it sleeps or waits,
 * where 3.7+ releases it: the same program reads the same on either.
 */
bool pygil_holds(const struct gilstate *g, uint64_t tstate, bool running)
{
	if (!g->known || !tstate)
		return false;
	if (g->uncreated)
		return running;
	return g->locked && g->holder == tstate;
}
