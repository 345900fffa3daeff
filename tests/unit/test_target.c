/* SPDX-License-Identifier: MIT */
/*
 * The per-thread state and mode policy (target.c) against a fake sampler
 * and a fake process laid out in this very process's memory (targetworld.h,
 * read back with process_vm_readv, as stack_walk's test does): which
 * samples and ticks count in cpu, wall and gil modes, with which status,
 * and where a tick's stack comes from (the kernel's last sample, the copy
 * taken as the thread left the CPU, the kept one, or a read at the tick).
 *
 * Stacks are told apart by depth: code objects sit at unmapped addresses,
 * so every frame is "[unknown]", and each source has its own depth.
 */
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/clock.h"
#include "core/limits.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "proc/remote.h"
#include "sample/sampler.h"
#include "sample/target.h"
#include "sample/threadtable.h"
#include "unit.h"

#include "targetworld.h"

static struct pbp_tstate *kstate(struct world *w, int i)
{
	for (int s = 0; s < SLOTS; s++)
		if (w->s.used[s] && w->s.tid_of[s] == TID(i))
			return &w->s.st[s];
	return NULL;
}

static void set_state(struct world *w, int i, bool oncpu, uint8_t reason, uint64_t switches,
		      uint64_t last_switch_ns)
{
	struct pbp_tstate *st = kstate(w, i);

	CHECK(st != NULL);
	if (!st)
		return;
	st->oncpu = oncpu;
	st->off_reason = reason;
	st->switches = switches;
	memset((void *)st->recent, 0, sizeof(st->recent));
	/*
	 * Switch number `switches` put it in this state at last_switch_ns; the
	 * ones before it alternate, long before any tick (at 1 ns). A switch in
	 * carries where it was until then, as the kernel's does: reason.
	 */
	for (uint64_t k = switches, j = 0; k >= 1 && j < PBP_SWITCH_RING; k--, j++) {
		bool in = j % 2 ? !oncpu : oncpu;

		st->recent[(k - 1) % PBP_SWITCH_RING] = (j ? 1 : last_switch_ns) << PBP_SWITCH_NS_SHIFT |
			(in ? PBP_SWITCH_ONCPU : 0) | reason;
	}
}

static void set_gil(int32_t locked, int holder)
{
	runtime.gil_locked = locked;
	runtime.gil_holder = holder >= 0 ? addr(&tstates[holder]) : 0;
}

/* Samples counted for thread i with this status in stacks of this depth. */
static uint64_t counted(const struct world *w, int i, uint32_t status, uint32_t depth)
{
	uint64_t total = 0;

	for (uint32_t s = 0; s < agg_nstacks(w->c.agg); s++) {
		const struct stack_tags *tags;
		uint64_t count;
		uint32_t n;

		agg_stack(w->c.agg, s, &n, &count, &tags);
		if (tags->tid == (uint32_t)TID(i) && tags->status == status && n == depth)
			total += count;
	}
	return total;
}

/* Ticks (and samples) target.c counted for thread i, stack or not: from its summary line. */
static unsigned long long thread_total(const struct world *w, int i)
{
	char *buf = NULL, want[32];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	unsigned long long n = 0;
	const char *at;

	target_print_threads(&w->c, &w->t, f);
	fclose(f);
	snprintf(want, sizeof(want), "thread %-7d ", TID(i));
	/* "thread TID  NAME  N samples: ...": the number just before " samples:". */
	at = strstr(buf, want);
	at = at ? strstr(at, " samples:") : NULL;
	while (at && at > buf && at[-1] >= '0' && at[-1] <= '9')
		at--;
	if (at)
		n = strtoull(at, NULL, 10);
	free(buf);
	return n;
}

/* ------------------------------------------------------------ cpu mode */

static void test_cpu_mode(void)
{
	struct world w;

	setup(&w, MODE_CPU);
	sample(&w, 0, PBP_F_TSTATE_FOUND | PBP_F_GIL_KNOWN | PBP_F_HOLDS_GIL, 1, KERNEL_DEPTH, 0);
	sample(&w, 1, PBP_F_TSTATE_FOUND | PBP_F_GIL_KNOWN, 1, KERNEL_DEPTH, 0);
	sample(&w, 2, PBP_F_TSTATE_FOUND, 1, KERNEL_DEPTH, 0);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, KERNEL_DEPTH), 1);
	CHECK_EQ_INT(counted(&w, 1, ST_NATIVE, KERNEL_DEPTH), 1);      /* on CPU without the GIL */
	CHECK_EQ_INT(counted(&w, 2, ST_RUNNING, KERNEL_DEPTH), 1);     /* GIL unknown: running */
	CHECK_EQ_INT(agg_total(w.c.agg), 3);
	/* cpu mode tracks no off-CPU state: no slot in the kernel's array. */
	CHECK(kstate(&w, 0) == NULL);
	CHECK_EQ_INT(w.s.set, 3);
	/* Not in the list, no state found by the kernel: not a Python thread. */
	sample(&w, 3, 0, 1, KERNEL_DEPTH, 0);
	CHECK_EQ_INT(w.c.dropped, 1);
	CHECK_EQ_INT(agg_total(w.c.agg), 3);
	/* Not yet in the kernel's map: the stack is finished from the state registered. */
	sample(&w, 0, PBP_F_NO_TSTATE | PBP_F_GIL_KNOWN | PBP_F_HOLDS_GIL, 2, 0, 0);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, READ_DEPTH), 1);
	/* Ticks are for wall and gil modes; in cpu mode one would count nothing more. */
	CHECK_EQ_INT(agg_total(w.c.agg), 4);
	teardown(&w);
}

/* ------------------------------------------------------------ wall mode, on CPU */

static void test_wall_on_cpu(void)
{
	struct world w;

	setup(&w, MODE_WALL);
	CHECK_EQ_INT(w.s.procs, 1);
	CHECK(w.s.proc.gil_locked == addr(&runtime.gil_locked));       /* the kernel watches the GIL */
	CHECK(w.s.proc.gil_holder == addr(&runtime.gil_holder));
	adopt(&w, 0);
	adopt(&w, 1);
	CHECK_EQ_INT(agg_total(w.c.agg), 0);    /* wall mode counts at ticks, not samples */
	set_gil(1, 0);
	set_state(&w, 0, true, 0, 5, T0 - 50 * MS);
	set_state(&w, 1, true, 0, 7, T0 - 50 * MS);
	/* Thread 0's last kernel sample is fresh (within two periods): it is the stack. */
	sample(&w, 0, PBP_F_GIL_KNOWN | PBP_F_HOLDS_GIL, T0 - 2 * PERIOD, KERNEL_DEPTH, 0);
	target_tick(&w.c, &w.t, T0);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, KERNEL_DEPTH), 1);
	CHECK_EQ_INT(w.c.from_kernel, 1);
	/* Thread 1 runs without the GIL; its only sample was no kernel stack: read now. */
	CHECK_EQ_INT(counted(&w, 1, ST_NATIVE, READ_DEPTH), 1);
	CHECK_EQ_INT(w.c.read_now, 1);
	/* One nanosecond older than two periods: not fresh, read now. */
	target_tick(&w.c, &w.t, T0 + 1);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, READ_DEPTH), 1);
	CHECK_EQ_INT(w.c.from_kernel, 1);
	CHECK_EQ_INT(w.c.read_now, 3);
	/* An on-CPU stack read at a tick is never reused: the thread runs on. */
	target_tick(&w.c, &w.t, T0 + PERIOD);
	CHECK_EQ_INT(w.c.reused, 0);
	CHECK_EQ_INT(w.c.read_now, 5);
	CHECK_EQ_INT(w.t.gil_ticks, 3);
	CHECK_EQ_INT(w.t.gil_held, 3);
	CHECK_EQ_INT(w.t.gil_contended, 0);
	teardown(&w);
}

/* ------------------------------------------------------------ wall mode, off CPU */

static void test_wall_off_cpu(void)
{
	struct world w;
	uint64_t at = T0;

	setup(&w, MODE_WALL);
	adopt(&w, 0);
	set_gil(1, 3);
	/* It slept at switch 8; the kernel copied its stack as it left. */
	set_state(&w, 0, false, PBP_OFF_SLEEP, 8, at - 50 * MS);
	sample(&w, 0, PBP_F_SWITCH_OUT, at - 50 * MS, SNAP_DEPTH, 8);
	target_tick(&w.c, &w.t, at);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, SNAP_DEPTH), 1);
	CHECK_EQ_INT(w.c.from_switch, 1);
	/* Still asleep, no switch: the same stack, kept. */
	target_tick(&w.c, &w.t, at += PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, SNAP_DEPTH), 2);
	CHECK_EQ_INT(w.c.reused, 1);
	CHECK_EQ_INT(w.c.read_now, 0);
	/* It ran and slept again (switch 10) with no copy: read now, then kept. */
	set_state(&w, 0, false, PBP_OFF_SLEEP, 10, at + MS);
	target_tick(&w.c, &w.t, at += PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, READ_DEPTH), 1);
	CHECK_EQ_INT(w.c.read_now, 1);
	target_tick(&w.c, &w.t, at += PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, READ_DEPTH), 2);
	CHECK_EQ_INT(w.c.reused, 2);
	/*
	 * It woke just after the tick instant (one switch, in): it still slept
	 * at the instant, with the kept stack.
	 */
	at += PERIOD;
	set_state(&w, 0, true, 0, 11, at + MS);
	target_tick(&w.c, &w.t, at);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, READ_DEPTH), 3);
	CHECK_EQ_INT(w.c.reused, 3);
	CHECK_EQ_INT(w.c.late_switches, 1);
	/* Two switches since the stack was kept: it ran in between, read again. */
	at += PERIOD;
	set_state(&w, 0, true, 0, 12, at + MS);
	target_tick(&w.c, &w.t, at);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, READ_DEPTH), 4);
	CHECK_EQ_INT(w.c.reused, 3);
	CHECK_EQ_INT(w.c.read_now, 2);
	CHECK_EQ_INT(thread_total(&w, 0), 6);
	teardown(&w);
}

/*
 * A thread that ran at the tick instant and left the CPU before the tick
 * looked: the copy taken as it left is its stack at the instant (off CPU
 * since, nothing could change it), counted as on CPU. Reading it instead
 * made late ticks later and locked the loop into reading every thread.
 */
static void test_late_switch_out(void)
{
	struct world w;

	setup(&w, MODE_WALL);
	adopt(&w, 0);
	set_gil(1, 0);
	sample(&w, 0, PBP_F_SWITCH_OUT, T0 + MS, SNAP_DEPTH, 21);
	set_state(&w, 0, false, PBP_OFF_SLEEP, 21, T0 + MS);
	target_tick(&w.c, &w.t, T0);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, SNAP_DEPTH), 1);
	CHECK_EQ_INT(w.c.from_switch, 1);
	CHECK_EQ_INT(w.c.read_now, 0);
	CHECK_EQ_INT(w.c.late_switches, 1);
	/* The same, but it has run since (another switch in and out): read now. */
	set_state(&w, 0, false, PBP_OFF_SLEEP, 23, T0 + PERIOD + MS);
	target_tick(&w.c, &w.t, T0 + PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, READ_DEPTH), 1);
	CHECK_EQ_INT(w.c.read_now, 1);
	teardown(&w);
}

/* ------------------------------------------------------------ statuses */

static void test_statuses(void)
{
	static const struct {
		uint8_t reason;
		int holder;             /* thread holding the GIL: 0 is the one looked at */
		uint32_t status;
	} cases[] = {
		{ PBP_OFF_RUNNABLE, 3, ST_RUNNABLE },
		{ PBP_OFF_DISK, 3, ST_DISK },
		{ PBP_OFF_SLEEP, 3, ST_SLEEPING },
		{ PBP_OFF_NONE, 3, ST_SLEEPING },       /* off CPU, reason never seen */
		{ PBP_OFF_GIL, 3, ST_GIL_WAIT },
		{ PBP_OFF_GIL, 0, ST_RUNNABLE },        /* preempted in the futex call after taking it */
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct world w;

		setup(&w, MODE_WALL);
		adopt(&w, 0);
		set_gil(1, cases[k].holder);
		set_state(&w, 0, false, cases[k].reason, 4, T0 - 50 * MS);
		target_tick(&w.c, &w.t, T0);
		CHECK_EQ_INT(counted(&w, 0, cases[k].status, READ_DEPTH), 1);
		CHECK_EQ_INT(agg_total(w.c.agg), 1);
		/* Contended: a thread off CPU waiting for the GIL. */
		CHECK_EQ_INT(w.t.gil_contended, cases[k].reason == PBP_OFF_GIL);
		teardown(&w);
	}
}

/* ------------------------------------------------------------ gil mode */

static void test_gil_mode(void)
{
	struct world w;

	setup(&w, MODE_GIL);
	for (int i = 0; i < 3; i++) {
		adopt(&w, i);
		set_state(&w, i, true, 0, 2, T0 - 50 * MS);
	}
	set_state(&w, 2, false, PBP_OFF_GIL, 3, T0 - 50 * MS);
	set_gil(1, 1);
	target_tick(&w.c, &w.t, T0);
	/* Only the holder counts, and nothing at all of the others. */
	CHECK_EQ_INT(counted(&w, 1, ST_RUNNING, READ_DEPTH), 1);
	CHECK_EQ_INT(agg_total(w.c.agg), 1);
	CHECK_EQ_INT(thread_total(&w, 0), 0);
	CHECK_EQ_INT(thread_total(&w, 2), 0);
	CHECK_EQ_INT(w.c.read_now, 1);
	CHECK_EQ_INT(w.t.gil_held, 1);
	CHECK_EQ_INT(w.t.gil_contended, 1);
	/* Released: nobody holds it, nothing counts. */
	set_gil(0, 1);
	target_tick(&w.c, &w.t, T0 + PERIOD);
	CHECK_EQ_INT(agg_total(w.c.agg), 1);
	CHECK_EQ_INT(w.t.gil_ticks, 2);
	CHECK_EQ_INT(w.t.gil_held, 1);
	/* Not created yet (3.6, one thread): whoever runs Python holds it. */
	set_gil(-1, -1);
	target_tick(&w.c, &w.t, T0 + 2 * PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, READ_DEPTH), 1);
	CHECK_EQ_INT(agg_total(w.c.agg), 3);
	CHECK_EQ_INT(thread_total(&w, 2), 0);     /* off CPU: it would have released it */
	CHECK_EQ_INT(w.t.gil_held, 2);
	/* ... and nobody while they sleep (issue 30, item 7: "GIL held 100%" asleep). */
	for (int i = 0; i < 3; i++)
		set_state(&w, i, false, PBP_OFF_SLEEP, 4, T0 + 2 * PERIOD);
	target_tick(&w.c, &w.t, T0 + 3 * PERIOD);
	CHECK_EQ_INT(agg_total(w.c.agg), 3);
	CHECK_EQ_INT(w.t.gil_ticks, 4);
	CHECK_EQ_INT(w.t.gil_held, 2);
	/* Preempted, it still runs Python: held, as 3.7+ keeps it. */
	set_state(&w, 0, false, PBP_OFF_RUNNABLE, 5, T0 + 3 * PERIOD);
	target_tick(&w.c, &w.t, T0 + 4 * PERIOD);
	CHECK_EQ_INT(agg_total(w.c.agg), 4);
	CHECK_EQ_INT(w.t.gil_held, 3);
	teardown(&w);
}

/* No GIL known (3.12+ before the first thread state): wall mode counts on-CPU threads as running. */
static void test_gil_unknown(void)
{
	struct world w;

	setup(&w, MODE_WALL);
	w.t.gil_addr = 0;
	adopt(&w, 0);
	set_state(&w, 0, true, 0, 2, T0 - 50 * MS);
	target_tick(&w.c, &w.t, T0);
	CHECK_EQ_INT(counted(&w, 0, ST_RUNNING, READ_DEPTH), 1);
	CHECK_EQ_INT(w.t.gil_held, 0);
	teardown(&w);
	setup(&w, MODE_GIL);
	w.t.gil_addr = 0;
	adopt(&w, 0);
	set_state(&w, 0, true, 0, 2, T0 - 50 * MS);
	target_tick(&w.c, &w.t, T0);
	CHECK_EQ_INT(agg_total(w.c.agg), 0);
	teardown(&w);
}

/* ------------------------------------------------------------ failures, windows, lifetimes */

/* A stack that cannot be read: the tick still counts the thread's status, with no stack. */
static void test_unreadable(void)
{
	struct world w;

	setup(&w, MODE_WALL);
	adopt(&w, 0);
	tstates[0].frame = 0x40;        /* unmapped */
	set_gil(1, 0);
	set_state(&w, 0, true, 0, 2, T0 - 50 * MS);
	target_tick(&w.c, &w.t, T0);
	CHECK_EQ_INT(agg_total(w.c.agg), 0);
	CHECK_EQ_INT(thread_total(&w, 0), 1);
	teardown(&w);
}

/* After agg_reset and target_new_window, a kept stack (location ids of the old aggregate) is not reused. */
static void test_new_window(void)
{
	struct world w;

	setup(&w, MODE_WALL);
	adopt(&w, 0);
	set_gil(1, 3);
	set_state(&w, 0, false, PBP_OFF_SLEEP, 8, T0 - 50 * MS);
	sample(&w, 0, PBP_F_SWITCH_OUT, T0 - 50 * MS, SNAP_DEPTH, 8);
	target_tick(&w.c, &w.t, T0);
	target_tick(&w.c, &w.t, T0 + PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, SNAP_DEPTH), 2);
	agg_reset(w.c.agg);
	target_new_window(&w.c, &w.t);
	CHECK_EQ_INT(agg_total(w.c.agg), 0);
	target_tick(&w.c, &w.t, T0 + 2 * PERIOD);
	CHECK_EQ_INT(counted(&w, 0, ST_SLEEPING, READ_DEPTH), 1);
	CHECK_EQ_INT(agg_total(w.c.agg), 1);
	CHECK_EQ_INT(w.c.read_now, 1);
	teardown(&w);
}

/*
 * A new window's aggregate is given the names of the threads it counts,
 * at their first count, not every thread's: a process starting threads all
 * the time had every name copied each second.
 */
static void test_window_names(void)
{
	struct world w;
	char want[64];

	setup(&w, MODE_CPU);
	for (int i = 0; i < NTHREADS; i++) {
		adopt(&w, i);
		snprintf(tc_find(&w.t, TID(i))->name, sizeof(want), "worker-%d", i);   /* as a names read found */
	}
	agg_reset(w.c.agg);
	target_new_window(&w.c, &w.t);
	sample(&w, 2, PBP_F_TSTATE_FOUND, 1, KERNEL_DEPTH, 0);
	CHECK_EQ_STR(agg_thread_name(w.c.agg, (uint32_t)w.t.pid, TID(2)), "worker-2");
	for (int i = 0; i < NTHREADS; i++)
		if (i != 2)
			CHECK(agg_thread_name(w.c.agg, (uint32_t)w.t.pid, TID(i)) == NULL);
	/* A thread counted later in the window is named then, as it was. */
	sample(&w, 3, PBP_F_TSTATE_FOUND, 2, KERNEL_DEPTH, 0);
	snprintf(want, sizeof(want), "worker-%d", 3);
	CHECK_EQ_STR(agg_thread_name(w.c.agg, (uint32_t)w.t.pid, TID(3)), want);
	CHECK_EQ_INT(counted(&w, 3, ST_RUNNING, KERNEL_DEPTH), 1);
	teardown(&w);
}

/* A target's labels and root frame, given once, are in every window's aggregate it has samples in. */
static void test_labels(void)
{
	struct proc_meta m = { .pid = (uint32_t)getpid() }, *copy;
	const struct proc_meta *got;
	const char *name, *file;
	uint32_t kind;
	int line;
	struct world w;

	m.label[PL_PYTHON_VERSION] = "3.99.0";
	m.label[PL_SERVICE] = "shop/web";
	copy = proc_meta_dup(&m);
	CHECK(copy && copy->label[PL_SERVICE] != m.label[PL_SERVICE] &&
	      !strcmp(copy->label[PL_SERVICE], "shop/web") && !copy->label[PL_POD]);
	free(copy);
	setup(&w, MODE_CPU);
	CHECK_EQ_INT(target_set_labels(&w.c, &w.t, &m, "process 1 app.py"), 0);
	m.label[PL_SERVICE] = "changed";        /* the target keeps its own copy */
	for (int window = 0; window < 4; window++) {
		if (window)
			adopt(&w, 0);   /* its first sample in the window gives the labels to it */
		got = agg_process(w.c.agg, (uint32_t)getpid());
		CHECK(got && !strcmp(got->label[PL_SERVICE], "shop/web") &&
		      !strcmp(got->label[PL_PYTHON_VERSION], "3.99.0") && !strcmp(got->label[PL_POD], ""));
		CHECK(w.t.proc_loc >= 0);
		if (w.t.proc_loc >= 0) {
			agg_loc_info(w.c.agg, (uint32_t)w.t.proc_loc, &name, &file, &line, &kind);
			CHECK_EQ_STR(name, window < 3 ? "process 1 app.py" : "process 1 renamed.py");
			CHECK_EQ_INT(kind, LOC_PROCESS);
		}
		/* Windows that keep the locations (the agent's) and windows that do not. */
		if (window == 2) {
			m.label[PL_SERVICE] = "shop/web";
			CHECK_EQ_INT(target_set_labels(&w.c, &w.t, &m, "process 1 renamed.py"), 0);
		}
		if (window % 2)
			agg_reset_stacks(w.c.agg);
		else
			agg_reset(w.c.agg);
		if (window == 2)
			agg_loc(w.c.agg, "taken", "by another", 1, LOC_PY);    /* the root's old id is this now */
		target_new_window(&w.c, &w.t);
	}
	teardown(&w);
}

/*
 * An agent closes a window every second: a target not sampled in one
 * costs nothing there (no read of the process, nothing written in the
 * aggregate), and its first sample after makes its names and labels again.
 */
static void test_idle_windows(void)
{
	struct proc_meta m = { .pid = (uint32_t)getpid() };
	struct world w;
	uint64_t reads;

	m.label[PL_SERVICE] = "idle";
	setup(&w, MODE_CPU);
	CHECK_EQ_INT(target_set_labels(&w.c, &w.t, &m, "process 1 idle.py"), 0);
	adopt(&w, 0);
	reads = remote_stats(w.t.p->r)->reads;
	CHECK(reads > 0);       /* target_init read its thread list: the count is live */
	for (int window = 0; window < 3; window++) {
		agg_reset(w.c.agg);
		target_new_window(&w.c, &w.t);
		CHECK(agg_process(w.c.agg, (uint32_t)getpid()) == NULL);
		CHECK_EQ_INT(w.t.proc_loc, -1);
	}
	CHECK_EQ_INT(remote_stats(w.t.p->r)->reads, reads);
	CHECK(w.t.counted == w.t.counted_rescan + 1);   /* record's periodic rescan: due for it */
	adopt(&w, 0);
	CHECK_EQ_INT(agg_total(w.c.agg), 1);
	CHECK(agg_process(w.c.agg, (uint32_t)getpid()) != NULL);
	CHECK(w.t.proc_loc >= 0);
	target_rescan(&w.c, &w.t, true);
	CHECK(remote_stats(w.t.p->r)->reads > reads);
	CHECK_EQ_INT(w.t.counted, w.t.counted_rescan);  /* read now: not again until sampled */
	teardown(&w);
}

/* Every slot and kernel thread entry a target took is given back when it goes. */
static void test_fini(void)
{
	struct world w;
	int used = 0;

	setup(&w, MODE_WALL);
	for (int i = 0; i < NTHREADS; i++)
		adopt(&w, i);
	CHECK_EQ_INT(w.s.set, NTHREADS);
	target_fini(&w.c, &w.t);
	for (int s = 0; s < SLOTS; s++)
		used += w.s.used[s];
	CHECK_EQ_INT(used, 0);
	CHECK_EQ_INT(w.s.del, NTHREADS);
	agg_free(w.c.agg);
	free(w.c.locs);
	free(w.c.list);
}

int main(void)
{
	test_cpu_mode();
	test_wall_on_cpu();
	test_wall_off_cpu();
	test_late_switch_out();
	test_statuses();
	test_gil_mode();
	test_gil_unknown();
	test_unreadable();
	test_new_window();
	test_window_names();
	test_labels();
	test_idle_windows();
	test_fini();
	return unit_done("target");
}
