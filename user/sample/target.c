/* SPDX-License-Identifier: MIT */
/*
 * A profiled process and its threads: which thread state each kernel tid
 * has, the last stack seen of each thread, and how samples and ticks turn
 * into counted stacks for the mode asked.
 *
 * cpu:  a kernel sample is counted as it arrives.
 * wall: at each tick every thread is counted once. A thread on a CPU uses
 *       the stack of its latest kernel sample; one that has not run since
 *       its stack was last read reuses it (the scheduler's switch count
 *       proves it unchanged); only the others are read from the target.
 * gil:  at each tick the thread holding the GIL is counted, the same way.
 *
 * The kernel side is reached through c->ops (struct sampler_ops), so this
 * file links without the BPF skeleton: tests/unit/test_target.c drives it
 * against a fake sampler and a fake process in its own memory.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "pybpfprof.h"
#include "sample/target.h"
#include "sample/threadtable.h"
#include "sample/natleaf.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "aggregate/timeline.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/limits.h"
#include "core/text.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "cpython/thread.h"
#include "cpython/threadname.h"
#include "proc/procfs.h"
#include "proc/remote.h"
#include "sample/asyncidle.h"
#include "sample/sampler.h"
#include "sample/threadnames.h"
#include "sample/switches.h"
#include "symbol/symbolize.h"

#define RESCAN_NS (20 * 1000000ull)     /* least time between two thread-list reads */
/*
 * A list read costs in proportion to the threads (2,000: 50 to 200 ms,
 * names and /proc included). Run back to back, as samples of threads not
 * in the list asked for them while a process started threads, they took
 * the whole loop: no tick ran, and the run overstayed -d. After each one
 * the next waits RESCAN_GAP times as long as it took: at most ~1/(1+GAP)
 * of the time goes to them.
 */
#define RESCAN_GAP 10
#define MAX_LOCS PBP_MAX_LOCS
/* A thread adopted (names_late) is named this late, by a list read at most one a GAP. */
#define ADOPTED_NAMES_NS (100 * 1000000ull)
#define ADOPTED_GAP_NS 1000000000ull
#define EMPTY_RESCAN_NS 1000000ull         /* a new process's first thread state: looked for */
#define EMPTY_FOR_NS (2 * 1000000000ull)   /* ... this often, for this long */
#define LABEL_ROOM 2            /* process and thread root frames */

/* ------------------------------------------------------------ registration */

/* Seed the kernel's state of a new thread from /proc: until it switches, that is all we know. */
static void seed_state(struct collector *c, struct target *t, struct tcache *e)
{
	volatile struct pbp_tstate *st = (volatile struct pbp_tstate *)c->ops->tstate(c->smp, e->slot);
	char state;

	if (!st)
		return;
	state = proc_thread_state(t->pid, e->tid);
	st->oncpu = state == 'R';
	st->off_reason = state == 'D' ? PBP_OFF_DISK : state == 'R' ? PBP_OFF_NONE :
			 state == 'T' || state == 't' ? PBP_OFF_STOPPED : PBP_OFF_SLEEP;
}

/*
 * The main thread is "MainThread" before threading names it (launch mode
 * samples it from its first instruction): named by its comm until then, one
 * thread would be two roots, "python3" and later "MainThread".
 */
#define MAIN_THREAD_NAME "MainThread"

/* The Python name (threading.Thread.name) when it could be read, else MainThread or the kernel's comm. */
static void set_name(struct collector *c, struct target *t, struct tcache *e, const char *pyname)
{
	char name[sizeof(e->name)];

	if (pyname && pyname[0])
		snprintf(name, sizeof(name), "%s", pyname);
	else if (e->tid == t->pid)
		snprintf(name, sizeof(name), "%s", MAIN_THREAD_NAME);
	else
		proc_thread_comm(t->pid, e->tid, name, sizeof(name));
	utf8_scrub(name);       /* comm is cut at 15 bytes, maybe inside a character */
	if (strcmp(name, e->name) == 0)
		return;
	memcpy(e->name, name, sizeof(name));
	tc_forget_counted(e);
	agg_set_thread_name(c->agg, (uint32_t)t->pid, (uint32_t)e->tid, e->name);
	e->name_due = false;
}

/*
 * names_read: pyname is what the names read found, in the Thread at pyobj;
 * else a known thread keeps its name.
 */
static void register_thread(struct collector *c, struct target *t, const struct pythread *th,
			    const char *pyname, uint64_t pyobj, bool names_read)
{
	struct tcache *e = tc_find(t, th->tid);

	if (!e) {
		e = tc_add(t, th->tid);
		if (!e)
			return;
		if (c->o.mode != MODE_CPU) {
			e->slot = c->ops->slot_alloc(c->smp);
			seed_state(c, t, e);
		}
		names_read = true;      /* a new thread gets its comm at least */
	}
	e->ns_tid = th->ns_tid;
	e->adopted = false;     /* adopt_thread sets it again after this call */
	if (names_read) {
		set_name(c, t, e, pyname);
		e->pyobj = pyname && pyname[0] ? pyobj : 0;
		e->named_samples = tc_samples(e);
	}
	if (e->tstate != th->tstate) {
		e->tstate = th->tstate;
		e->have = false;
		c->ops->set_thread(c->smp, e->tid, t->pid, e->tstate, e->slot);
	}
	e->gen = t->gen;
}

static int tell_kernel(struct collector *c, struct target *t, bool gil);
static void window_catch_up(struct collector *c, struct target *t);

static uint64_t list_hash(const struct pythread *list, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ list[i].tstate ^ (uint64_t)list[i].tid << 48) * 1099511628211ull;
	return h;
}

/* When the next read may start, after one from start to end: see RESCAN_GAP. */
static uint64_t after_cost(uint64_t start, uint64_t end)
{
	uint64_t gap = (end - start) * RESCAN_GAP;

	return end + (gap > RESCAN_NS ? gap : RESCAN_NS);
}

/* Python names of the list's threads and their Thread objects (*objs), NULL when not due yet or not read. */
static char (*read_names(struct collector *c, struct target *t, size_t n, bool full,
			 uint64_t **objs))[PBP_NAME_LEN]
{
	char (*names)[PBP_NAME_LEN];
	uint64_t start = mono_ns();

	*objs = NULL;
	if (!full && start < t->names_ok) {
		t->names_due = true;
		target_come_back(t, t->names_ok);
		return NULL;
	}
	names = calloc(n ? n : 1, sizeof(*names));
	*objs = calloc(n ? n : 1, sizeof(**objs));
	if (!*objs) {
		free(names);
		names = NULL;
	}
	if (names) {
		pythreads_name_all(t->p, c->list, n, names, *objs);
		c->name_reads++;
	}
	t->names_ns = start;
	t->names_due = false;
	t->names_ok = after_cost(start, mono_ns());
	return names;
}

/*
 * Reading the names walks the threading module's dict: most of a rescan's
 * reads. A list with the same threads at the same states is taken as
 * unchanged, its names checked thread by thread (tnames_hold). The list
 * and the names each wait after a read in proportion to what it cost, so
 * a process starting thousands of threads never has them read back to
 * back; a thread is registered at once, named (by its comm until then)
 * when the names are read next.
 */
void target_rescan(struct collector *c, struct target *t, bool full)
{
	char (*names)[PBP_NAME_LEN] = NULL;
	uint64_t *objs = NULL;
	size_t n = 0;
	uint64_t h, now = mono_ns();
	bool empty = false;
	int err;

	if (!full && now < t->rescan_ok) {
		target_come_back(t, t->rescan_ok);
		return;
	}
	window_catch_up(c, t);
	if (!c->list && !(c->list = calloc(PBP_MAX_THREADS, sizeof(*c->list))))
		return;         /* read at the next sample or rescan */
	t->last_rescan = now;
	t->later_adopted = false;
	t->counted_rescan = t->counted;
	c->rescans++;
	remote_invalidate_all(t->p->r);
	err = pythreads_read(t->p, c->list, PBP_MAX_THREADS, &n);
	if (err || n == 0)
		memset(&c->list[0], 0, sizeof(c->list[0]));    /* not the last target's first thread */
	/*
	 * A process caught at its first instruction (launch mode, an exec) has
	 * no thread yet: look again soon, for wall and gil ticks to count it.
	 */
	empty = (err || n == 0) && now - t->init_ns < EMPTY_FOR_NS;
	if (err)
		goto out;
	/* 3.12+ keep the GIL in the interpreter, which a process at its first instruction lacks. */
	if (!t->gil_addr && n > 0)
		tell_kernel(c, t, true);
	h = list_hash(c->list, n);
	if (!full && h == t->list_hash && !t->names_due && tnames_hold(c, t, now))
		goto out;
	t->list_hash = h;
	names = read_names(c, t, n, full || now - t->names_ns >= NAMES_EVERY_NS, &objs);
	t->gen++;
	for (size_t i = 0; i < n; i++)
		if (c->list[i].tid)
			register_thread(c, t, &c->list[i], names ? names[i] : NULL, names ? objs[i] : 0,
					names != NULL);
	if (names)
		tnames_again(t, c->list, names, n, h, now);
	free(names);
	free(objs);
	tc_sweep(c, t);
out:
	/* Its pages were this pass's: a process sampled again makes them anew, an idle one holds none. */
	remote_release(t->p->r);
	now = mono_ns();
	c->rescan_ns += now - t->last_rescan;
	t->rescan_ok = empty ? t->last_rescan + EMPTY_RESCAN_NS : after_cost(t->last_rescan, now);
	if (empty)
		t->rescan_soon = t->rescan_ok;
}

/*
 * Adopted threads (names_late) ask for a list read to be named. In a
 * process that starts short threads they have mostly ended by then: the
 * read would find them gone and nothing else, so it is not made when every
 * adopted thread has ended and every listed one is there (one ended too:
 * the read has news). A rename waits for the periodic look, as one in a
 * process sampled without new threads does.
 */
bool target_spare_late_read(struct collector *c, struct target *t)
{
	bool adopted = false;

	for (uint32_t i = 0; t->later_adopted && i < t->tc_cap; i++) {
		struct tcache *e = &t->tc[i];

		if (e->tid && e->adopted == proc_thread_alive(t->pid, e->tid))
			return false;
		adopted |= e->tid && e->adopted;
	}
	if (!adopted)
		return false;
	for (uint32_t i = 0; i < t->tc_cap; i++)
		if (t->tc[i].tid && t->tc[i].adopted)
			t->tc[i].gen = t->gen + 1;      /* not the target's: swept */
	tc_sweep(c, t);
	t->later_adopted = false;
	c->lists_spared++;
	return true;
}

/* The kernel watches the GIL's flag and holder, and futex waits inside its struct. */
static void gil_addrs(struct target *t, struct pbp_proc *kp)
{
	struct gilstate g;
	uint64_t interp = 0;

	remote_ptr(t->p->r, t->p->runtime + t->p->v.rt_interpreters_head, &interp);
	if (pygil_read(t->p, interp, &g) == 0 && g.addr) {
		t->gil_addr = g.addr;
		kp->gil_locked = g.addr + t->p->v.gil_locked;
		kp->gil_holder = g.addr + t->p->v.gil_last_holder;
		kp->gil_lo = g.addr + t->p->v.gil_wait_lo;
		kp->gil_hi = g.addr + (t->p->v.gil_size != PYVER_NOOFF ? t->p->v.gil_size : 0);
	}
}

/* What the kernel needs to find a thread's state itself (bpf/find.bpf.h: find_tstate). */
static void thread_list_addrs(struct target *t, struct pbp_proc *kp)
{
	const struct pyver *v = &t->p->v;
	uint32_t offs[] = { v->is_threads_head, v->is_next, v->ts_next, v->ts_thread_id };

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] == PYVER_NOOFF || offs[i] > UINT16_MAX - 8)
			return;
	kp->interp_head = t->p->runtime + v->rt_interpreters_head;
	kp->is_threads_head = (uint16_t)v->is_threads_head;
	kp->is_next = (uint16_t)v->is_next;
	kp->ts_next = (uint16_t)v->ts_next;
	kp->ts_thread_id = (uint16_t)v->ts_thread_id;
}

/* What the kernel knows of the process: its layout, GIL (unless !gil: later) and thread lists. */
static int tell_kernel(struct collector *c, struct target *t, bool gil)
{
	struct pbp_proc kp = { .off = t->p->v.k, .code_count = t->p->code_count };

	if (c->o.native_leaf && t->p->v.free_threaded && t->p->v.ts_state <= UINT16_MAX)
		kp.off.ts_attached = (uint16_t)t->p->v.ts_state;
	if (gil)
		gil_addrs(t, &kp);
	thread_list_addrs(t, &kp);
	return c->ops->add_proc(c->smp, t->pid, &kp) != 0 ? -PBP_E_BPF : 0;
}

/* --async: task frames into a stack; the kernel learns the layout when it is found. */
/* The task the stack now shows running (0: none), which wall ticks do not count as waiting. */
static uint64_t join_tasks(struct collector *c, struct target *t, const struct async_src *src,
			   uint32_t *locs, uint32_t *n, uint32_t max)
{
	uint64_t task = 0;
	bool tell = false;

	async_join(&t->aio, t->p, c->agg, src, locs, n, max, &c->async, &tell, c->o.mode == MODE_WALL, &task);
	if (tell)
		tell_kernel(c, t, true);
	return task;
}

/*
 * --async: asyncio's layout looked for before the kernel is first told of
 * the process (3.14's), and again once its threads are known (3.11 to
 * 3.13's, found from a thread's interpreter), so that the kernel copies the
 * running task or coroutine frame from the first samples on, not only
 * once the first is named.
 */
static void async_early(struct collector *c, struct target *t, uint64_t tstate)
{
	bool tell = false;

	if (async_prepare(&t->aio, t->p, tstate, &tell) == 0 && tell && tstate)
		tell_kernel(c, t, true);
}

int target_init(struct collector *c, struct target *t)
{
	/*
	 * A whole host in cpu mode, a target's child just forked: most exec at
	 * once (subprocess, shells), and its threads' states are found by the
	 * kernel at their first samples (adopt_thread). Its list, names and
	 * GIL are read a little later, if it has not become another program
	 * by then: read at once, they were a third of the agent's CPU on a
	 * host whose Python processes start others.
	 */
	bool later = c->o.names_late && t->p->origin;

	t->proc_loc = t->root_loc = -1;
	t->init_ns = mono_ns();
	if (c->o.async)
		async_early(c, t, 0);
	if (tell_kernel(c, t, !later) != 0)
		return -PBP_E_BPF;
	t->alive = true;
	if (later) {
		t->rescan_later = t->init_ns + ADOPTED_NAMES_NS;
		return 0;
	}
	target_rescan(c, t, true);
	/* The scratch holds this target's list now (its first entry zeroed when none was read). */
	if (c->o.async && c->list && c->list[0].tstate)
		async_early(c, t, c->list[0].tstate);
	return 0;
}

void target_fini(struct collector *c, struct target *t)
{
	async_state_free(t->aio);
	t->aio = NULL;
	for (uint32_t i = 0; i < t->tc_cap; i++) {
		/* A target dropped while the run goes on (it exec'd, or -a): its threads go too. */
		if (t->tc[i].tid && c->smp) {
			c->ops->del_thread(c->smp, t->tc[i].tid);
			c->ops->slot_free(c->smp, t->tc[i].slot);
		}
		free(t->tc[i].locs);
	}
	free(t->tc);
	stackmemo_free(t->memo);
	natproc_free(&t->nat);
	free(t->meta);
	free(t->root);
	if (t->p)
		c->reads_gone += remote_stats(t->p->r)->reads;
	pyproc_close(t->p);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ counting */

static void count(struct collector *c, struct target *t, struct tcache *e, const uint32_t *py,
		  uint32_t n, uint32_t status, uint64_t when)
{
	struct stack_tags tags = { .pid = (uint32_t)t->pid, .tid = (uint32_t)e->tid, .status = status };
	bool kept = py == e->locs && status < ST__COUNT;    /* the thread's kept stack */
	uint32_t k = 0;
	int64_t id;

	e->status[status < ST__COUNT ? status : ST_UNKNOWN]++;
	t->counted++;
	if (e->name_due) {      /* before its stack or its waiting tasks' (tick_tasks) */
		e->name_due = false;
		agg_set_thread_name(c->agg, (uint32_t)t->pid, (uint32_t)e->tid, e->name);
	}
	if (n == 0)
		return;     /* no Python frame: nothing to attribute */
	if (kept && e->agg_id[status] >= 0) {
		agg_bump(c->agg, (uint32_t)e->agg_id[status], 1);
		if (c->timeline)
			timeline_add(c->timeline, e->agg_id[status], when);
		return;
	}
	if (t->proc_loc >= 0)
		c->locs[k++] = (uint32_t)t->proc_loc;
	if (c->o.per_thread) {
		if (e->label < 0)
			e->label = agg_thread_loc(c->agg, (uint32_t)t->pid, (uint32_t)e->tid, (uint32_t)e->ns_tid,
						  e->name);
		if (e->label < 0)
			return;
		c->locs[k++] = (uint32_t)e->label;
	}
	if (py != c->locs + k)
		memmove(c->locs + k, py, n * sizeof(*py));
	k += n;
	if (c->o.status) {
		if ((id = agg_loc(c->agg, status_label(status), NULL, -1, LOC_STATUS)) < 0)
			return;
		c->locs[k++] = (uint32_t)id;
	}
	if (agg_add(c->agg, &tags, c->locs, k, 1) != 0)
		return;
	if (kept)
		e->agg_id[status] = agg_last(c->agg);
	if (c->timeline)
		timeline_add(c->timeline, agg_last(c->agg), when);    /* -1, left out: folded */
}

static int keep_stack(struct tcache *e, const uint32_t *locs, uint32_t n, uint64_t task)
{
	if (n > e->cap) {
		uint32_t *p = realloc(e->locs, n * sizeof(*p));

		if (!p)
			return -PBP_E_NOMEM;
		e->locs = p;
		e->cap = n;
	}
	if (n)  /* e->locs is NULL until a stack has had a frame */
		memcpy(e->locs, locs, n * sizeof(*locs));
	e->n = n;
	e->task = task;
	tc_forget_counted(e);
	e->have = true;
	return 0;
}

/*
 * A thread the thread list did not give (it ended since, or its tid could
 * not be matched) whose state the kernel found at the sample: counted as it,
 * until a rescan says otherwise.
 */
static struct tcache *adopt_thread(struct collector *c, struct target *t, pid_t tid, uint64_t tstate)
{
	struct pythread th = { .tid = tid, .tstate = tstate };

	/*
	 * Named late, it carries its process's command name until then (which a
	 * thread inherits) rather than /proc being read for each new thread; the
	 * main thread is MainThread, as it will be once named.
	 */
	if (c->o.names_late && !t->comm[0])
		proc_thread_comm(t->pid, t->pid, t->comm, sizeof(t->comm));
	struct tcache *e;

	register_thread(c, t, &th, c->o.names_late && tid != t->pid ? t->comm : NULL, 0, false);
	e = tc_find(t, tid);
	if (e)
		e->adopted = true;
	return e;
}

void target_on_sample(struct collector *c, struct target *t, const struct pbp_sample *ks)
{
	struct tcache *e = tc_find(t, (pid_t)ks->tid);
	struct pbp_sample s;
	uint32_t n = 0, off = LABEL_ROOM;
	uint64_t task = 0;

	window_catch_up(c, t);
	if (!e && (ks->flags & PBP_F_TSTATE_FOUND) && c->o.names_late) {
		/*
		 * The kernel found the new thread's state, which is all a sample
		 * needs; a process starting threads by the dozen had a list read
		 * for each (most of the agent's CPU in its soak).
		 */
		e = adopt_thread(c, t, (pid_t)ks->tid, ks->tstate);
		if (e && !t->rescan_later) {
			uint64_t when = mono_ns() + ADOPTED_NAMES_NS;

			if (when < t->last_rescan + ADOPTED_GAP_NS)
				when = t->last_rescan + ADOPTED_GAP_NS;
			t->rescan_later = when;
			t->later_adopted = true;
		}
	}
	if (!e || (ks->flags & PBP_F_NO_TSTATE)) {
		/* A thread born since the last scan: find its state, and tell the kernel. */
		target_rescan(c, t, false);     /* or later, if one ran just now */
		e = tc_find(t, (pid_t)ks->tid);
		if (!e && (ks->flags & PBP_F_TSTATE_FOUND))
			e = adopt_thread(c, t, (pid_t)ks->tid, ks->tstate);
		if (!e) {
			c->dropped++;
			return;
		}
	}
	if (ks->flags & PBP_F_NO_TSTATE) {
		memcpy(&s, ks, offsetof(struct pbp_sample, frames));
		s.tstate = e->tstate;
		ks = &s;
	}
	remote_invalidate_all(t->p->r);
	/* Python frames go after room for the root labels, which count() puts before them. */
	symbolize_memo(&t->memo, t->p, ks, c->agg, c->locs + off, MAX_LOCS - off - 1, &n, &c->sym);
	if (c->o.async && n)
		task = join_tasks(c, t, &(struct async_src){ e->tstate, ks->flags & PBP_F_TASK, ks->task,
							ks->flags & PBP_F_CORO ? ks->task : 0 },
			   c->locs + off, &n, MAX_LOCS - off - 1);
	target_native_leaf(c, t, ks, c->locs + off, &n, MAX_LOCS - off - 1);
	target_kernel_frames(c, ks, c->locs + off, &n, MAX_LOCS - off - 1);
	if (c->o.mode == MODE_CPU) {
		bool known = ks->flags & PBP_F_GIL_KNOWN, holds = ks->flags & PBP_F_HOLDS_GIL;

		count(c, t, e, c->locs + off, n, status_classify(true, PBP_OFF_NONE, known, holds), ks->ts);
		return;
	}
	if (ks->flags & PBP_F_SWITCH_OUT) {
		/* Its stack until the switch count moves on: a tick reads nothing. */
		if (keep_stack(e, c->locs + off, n, task) == 0) {
			e->kernel_ns = 0;
			e->read_off_cpu = true;
			e->switch_snap = true;
			e->switches = ks->switches;
		}
		return;
	}
	if (keep_stack(e, c->locs + off, n, task) == 0) {
		e->kernel_ns = ks->ts;
		e->read_off_cpu = false;
		e->kernel_gil_known = ks->flags & PBP_F_GIL_KNOWN;
		e->kernel_holds_gil = ks->flags & PBP_F_HOLDS_GIL;
	}
}

/* ------------------------------------------------------------ ticks */

/*
 * A stack kept while the thread was off CPU still holds at the tick if the
 * thread has not switched since, or if its one switch since is the switch
 * in that came after the tick instant (it was still off CPU then). And if
 * the thread is off CPU now and has not switched since, reading it now
 * would give the kept stack again, even when the switch out came after
 * the instant (it was running then): a late tick used to read every such
 * thread, each read made the next tick later and so more threads such,
 * and with 2,000 threads the loop locked into reading them all (1.4 GB in
 * 5 s, 85% of ticks dropped) where another run read nothing.
 */
static bool off_cpu_stack_holds(const struct tcache *e, const struct sched_at *st)
{
	if (!e->have || !e->read_off_cpu)
		return false;
	if (!st->oncpu_now && e->switches == st->switches)
		return true;
	return !st->oncpu && st->after_known && st->switches - st->after == e->switches;
}

/* The thread's stack at this tick, by the cheapest exact means. */
static int tick_stack(struct collector *c, struct target *t, struct tcache *e,
		      const struct sched_at *st, uint64_t now_kns)
{
	uint64_t fresh = 2 * 1000000000ull / c->o.hz;
	uint64_t task = 0;
	uint32_t n = 0;
	int err;

	if (st->oncpu && e->have && e->kernel_ns && now_kns - e->kernel_ns <= fresh) {
		c->from_kernel++;
		return 0;
	}
	if (off_cpu_stack_holds(e, st)) {
		if (e->switch_snap)
			c->from_switch++;
		else
			c->reused++;
		e->switch_snap = false;
		return 0;
	}
	c->read_now++;
	remote_invalidate_all(t->p->r);
	err = symbolize_thread(t->p, e->tstate, c->agg, c->locs, MAX_LOCS - 2, &n, &c->sym);
	if (err && n == 0)
		return err;
	if (c->o.async)
		task = join_tasks(c, t, &(struct async_src){ e->tstate, false, 0, 0 }, c->locs, &n, MAX_LOCS - 2);
	err = keep_stack(e, c->locs, n, task);
	e->kernel_ns = 0;
	e->switch_snap = false;
	e->read_off_cpu = !st->oncpu_now;
	e->switches = st->switches;
	return err;
}

/*
 * The thread's state at the tick instant, not at the (later) moment we look:
 * waking up to look can itself preempt the thread (switches.c).
 */
static void state_at(struct collector *c, const struct tcache *e, uint64_t instant,
		     struct sched_at *st)
{
	const volatile struct pbp_tstate *v = c->ops->tstate(c->smp, e->slot);

	if (!v) {
		*st = (struct sched_at){ 0 };
		return;
	}
	sched_state_at(v, instant, st);
	c->late_switches += st->after;
	c->states_guessed += st->guessed;
}

/* wall --async: the thread's waiting tasks too, under its root frames (asyncidle.c). */
static void tick_tasks(struct collector *c, struct target *t, struct tcache *e, uint64_t instant)
{
	uint32_t root[2] = { (uint32_t)t->proc_loc, (uint32_t)e->label };
	bool proc = t->proc_loc >= 0;

	if (c->o.per_thread && e->label < 0)
		return;         /* the thread's own stack had no frame: no label made */
	/*
	 * asyncio imported after the start (a launched command): its layout is
	 * looked for again here (layout() paces it), for a loop whose tasks
	 * all wait never has a task's sample name one.
	 */
	async_early(c, t, e->tstate);
	async_idle_tick(t->aio, t->p, e->tstate, &(struct async_sink){ c->agg, c->timeline, instant,
			{ (uint32_t)t->pid, (uint32_t)e->tid, ST_UNKNOWN, 0 }, root + !proc,
			(uint32_t)proc + c->o.per_thread, e->task }, &c->async);
}

/* Whether the thread held the GIL at the tick; *waits whether it waited for it. */
static bool tick_thread(struct collector *c, struct target *t, struct tcache *e,
			const struct gilstate *g, uint64_t instant, bool *waits)
{
	struct sched_at st;
	uint32_t status;
	bool holds;

	state_at(c, e, instant, &st);
	*waits = !st.oncpu && st.off_reason == PBP_OFF_GIL;
	holds = pygil_holds(g, e->tstate, st.oncpu || st.off_reason == PBP_OFF_RUNNABLE);
	if (c->o.mode == MODE_GIL && !holds)
		return holds;
	status = status_classify(st.oncpu, st.off_reason, g->known, holds);
	if (tick_stack(c, t, e, &st, instant) != 0) {
		e->status[status]++;
		return holds;
	}
	count(c, t, e, e->locs, e->n, status, instant);
	if (c->o.async && c->o.mode == MODE_WALL && t->aio)
		tick_tasks(c, t, e, instant);
	return holds;
}

void target_tick(struct collector *c, struct target *t, uint64_t instant)
{
	struct gilstate g = { 0 };
	bool contended = false, held = false;

	if (!t->alive)
		return;
	window_catch_up(c, t);
	/* One read a tick: the GIL struct of the main interpreter stays where it is. */
	remote_invalidate_all(t->p->r);
	if (t->gil_addr)
		pygil_state(t->p, t->gil_addr, &g);
	for (uint32_t i = 0; i < t->tc_cap; i++) {
		struct tcache *e = &t->tc[i];
		bool waits;

		if (!e->tid)
			continue;
		held |= tick_thread(c, t, e, &g, instant, &waits);
		contended |= waits;
	}
	t->gil_ticks++;
	/* Not created yet (3.6): held while its one thread runs, as pygil_holds says. */
	t->gil_held += g.known && (g.uncreated ? held : g.locked);
	t->gil_contended += contended;
}

/* The kept labels into the aggregate in use, and the root frame unless it kept its locations. */
static int apply_labels(struct collector *c, struct target *t)
{
	int err = t->meta ? agg_set_process(c->agg, t->meta) : 0;
	uint64_t v = agg_loc_epoch(c->agg);

	if (t->root && (t->root_loc < 0 || t->root_locs != v)) {
		t->root_loc = agg_loc(c->agg, t->root, NULL, -1, LOC_PROCESS);
		t->root_locs = v;
	}
	t->proc_loc = t->root ? t->root_loc : -1;
	return err;
}

int target_set_labels(struct collector *c, struct target *t, const struct proc_meta *m, const char *root)
{
	struct proc_meta *meta = proc_meta_dup(m);
	char *name = root ? strdup(root) : NULL;

	if (!meta || (root && !name)) {
		free(meta);
		free(name);
		return -PBP_E_NOMEM;
	}
	free(t->meta);
	free(t->root);
	t->meta = meta;
	t->root = name;
	t->labels_ns = mono_ns();
	t->counted_labels = t->counted;
	t->root_loc = -1;       /* another name, maybe */
	return apply_labels(c, t);
}

/*
 * The aggregate was reset (a window closed): its ids mean nothing now, kept
 * stacks included. Each thread's stack is read again at its next tick or
 * sample, and its name given to the new aggregate when it is first counted
 * there: a profile names only threads it has samples of, and a process
 * starting threads all the time had every name copied each second. That
 * is done at the target's next use (window_catch_up), not here: an agent
 * closes a window a second, and a node's idle processes would each cost a
 * pass over their threads every second for nothing.
 */
void target_new_window(struct collector *c, struct target *t)
{
	(void)c;
	t->window_stale = true;
	t->proc_loc = -1;
}

static void window_catch_up(struct collector *c, struct target *t)
{
	if (!t->window_stale)
		return;
	t->window_stale = false;
	for (uint32_t i = 0; i < t->tc_cap; i++) {
		struct tcache *e = &t->tc[i];

		if (!e->tid)
			continue;
		tc_forget_counted(e);
		e->have = false;
		e->kernel_ns = 0;
		e->read_off_cpu = e->switch_snap = false;
		e->name_due = e->name[0] != '\0';
	}
	t->proc_loc = -1;
	async_idle_new_window(t->aio);
	apply_labels(c, t);
}
