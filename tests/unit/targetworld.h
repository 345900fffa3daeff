/* SPDX-License-Identifier: MIT */
/*
 * The world target.c's unit tests run in: a fake sampler (slots, thread
 * states, the calls target.c makes) and a fake process laid out in this
 * very process's memory (read back with process_vm_readv), one target of
 * it, and kernel samples of its threads. Included by one test program each.
 */
#ifndef PBP_TESTS_TARGETWORLD_H
#define PBP_TESTS_TARGETWORLD_H

#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "core/limits.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "proc/remote.h"
#include "sample/sampler.h"
#include "sample/target.h"
#include "unit.h"

#define KERNEL_DEPTH 2          /* a kernel sample taken on CPU */
#define READ_DEPTH 3            /* the thread's frame chain, read at a tick */
#define SNAP_DEPTH 4            /* the kernel's copy as the thread left the CPU */
#define NTHREADS 4
#define HZ 100
#define PERIOD (1000000000ull / HZ)
#define MS 1000000ull
#define T0 (100 * 1000000000ull)        /* first tick instant */
#define TID(i) (100001 + (i))           /* no task of ours: /proc knows none of them */

/* ------------------------------------------------------------ fake sampler */

#define SLOTS 16

struct sampler {
	struct pbp_tstate st[SLOTS];
	bool used[SLOTS];
	pid_t tid_of[SLOTS];
	struct pbp_proc proc;
	int procs, set, del;
};

static int fake_add_proc(struct sampler *s, pid_t pid, const struct pbp_proc *p)
{
	(void)pid;
	s->proc = *p;
	s->procs++;
	return 0;
}

static int fake_slot_alloc(struct sampler *s)
{
	for (int i = 0; i < SLOTS; i++) {
		if (!s->used[i]) {
			s->used[i] = true;
			memset(&s->st[i], 0, sizeof(s->st[i]));
			return i;
		}
	}
	return -1;
}

static void fake_slot_free(struct sampler *s, int slot)
{
	if (slot >= 0 && slot < SLOTS)
		s->used[slot] = false;
}

static const volatile struct pbp_tstate *fake_tstate(struct sampler *s, int slot)
{
	return slot >= 0 && slot < SLOTS && s->used[slot] ? &s->st[slot] : NULL;
}

static int fake_set_thread(struct sampler *s, pid_t tid, pid_t tgid, uint64_t tstate, int slot)
{
	(void)tgid, (void)tstate;
	if (slot >= 0 && slot < SLOTS)
		s->tid_of[slot] = tid;
	s->set++;
	return 0;
}

static void fake_del_thread(struct sampler *s, pid_t tid)
{
	(void)tid;
	s->del++;
}

static const struct sampler_ops fake_ops = {
	fake_add_proc, fake_slot_alloc, fake_slot_free, fake_tstate, fake_set_thread, fake_del_thread,
	NULL,   /* no stack copies: --native is not exercised here */
	NULL,   /* nor kernel stacks (--kernel: test_kernel.c) */
};

/* ------------------------------------------------------------ fake process */

/* Offsets match the pyver open_fake() makes. */
struct fake_frame {
	uint64_t previous, code, instr;
};

struct fake_tstate {
	uint64_t next, interp, native_id, thread_id, frame;
};

struct fake_runtime {
	uint64_t interp_head;   /* unreadable: the thread list cannot be read, threads are adopted */
	int32_t gil_locked;     /* the GIL struct, at 8 */
	uint32_t pad;
	uint64_t gil_holder;
};

static struct fake_runtime runtime;
static struct fake_tstate tstates[NTHREADS];
static struct fake_frame chains[NTHREADS][READ_DEPTH];

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Thread i's chain: READ_DEPTH frames of code at unmapped addresses. */
static void build_process(void)
{
	memset(&runtime, 0, sizeof(runtime));
	runtime.interp_head = 0x40;
	for (int i = 0; i < NTHREADS; i++) {
		for (int d = 0; d < READ_DEPTH; d++) {
			chains[i][d].previous = d + 1 < READ_DEPTH ? addr(&chains[i][d + 1]) : 0;
			chains[i][d].code = 0x100 + 0x10 * (uint64_t)d;
			chains[i][d].instr = 0;
		}
		memset(&tstates[i], 0, sizeof(tstates[i]));
		tstates[i].frame = addr(&chains[i][0]);
	}
}

static struct pyproc *open_fake(void)
{
	struct pyproc *p = calloc(1, sizeof(*p));
	struct pyver *v = &p->v;
	struct pbp_offsets *k = &v->k;

	p->pid = p->ns_pid = getpid();
	p->runtime = addr(&runtime);
	p->r = remote_open(p->pid, 16);
	p->codes = codecache_new(64, 1 << 20);
	snprintf(p->version, sizeof(p->version), "3.99.0");
	v->rt_interpreters_head = 0;
	v->rt_gil = 8;
	v->gil_locked = 0, v->gil_last_holder = 8, v->gil_size = 16, v->gil_wait_lo = 0;
	v->is_ceval_gil = v->is_id = PYVER_NOOFF;
	v->is_next = 0, v->is_threads_head = 8;
	v->ts_next = 0, v->ts_interp = 8, v->ts_native_thread_id = 16, v->ts_thread_id = 24;
	k->ts_frame = 32, k->cframe_current = PBP_NOOFF;
	k->fr_previous = 0, k->fr_code = 8, k->fr_instr = 16;
	k->fr_owner = k->fr_is_entry = PBP_NOOFF;
	k->owner_cstack = k->owner_interp = 0xff;
	return p;
}

/* ------------------------------------------------------------ the world */

struct world {
	struct sampler s;
	struct collector c;
	struct target t;
};

static void setup(struct world *w, enum pbp_mode mode)
{
	memset(w, 0, sizeof(*w));
	build_process();
	w->c.o = (struct profile_opts){ .mode = mode, .hz = HZ };
	w->c.smp = &w->s;
	w->c.ops = &fake_ops;
	w->c.agg = agg_new();
	w->c.locs = malloc(sizeof(*w->c.locs) * PBP_MAX_LOCS);
	w->t.pid = getpid();
	w->t.p = open_fake();
	CHECK_EQ_INT(target_init(&w->c, &w->t), 0);
}

static void teardown(struct world *w)
{
	target_fini(&w->c, &w->t);
	agg_free(w->c.agg);
	free(w->c.locs);
	free(w->c.list);
}

/* A kernel sample of thread i, depth frames deep (code at unmapped addresses). */
static void sample(struct world *w, int i, uint16_t flags, uint64_t ts, int depth, uint64_t switches)
{
	static struct pbp_sample ks;

	memset(&ks, 0, sizeof(ks));
	ks.ts = ts;
	ks.tstate = flags & PBP_F_NO_TSTATE ? 0 : addr(&tstates[i]);     /* not in the kernel's map */
	ks.switches = switches;
	ks.tgid = (uint32_t)w->t.pid;
	ks.tid = (uint32_t)TID(i);
	ks.nframes = (uint16_t)depth;
	ks.flags = flags;
	for (int d = 0; d < depth; d++) {
		ks.frames[d].code = 0x100 + 0x10 * (uint64_t)d;
		ks.frames[d].firstlineno = 1;
	}
	target_on_sample(&w->c, &w->t, &ks);
}

/*
 * Thread i as the kernel finds it at its first sample (not in the list,
 * its state found by the kernel): adopted. ts 0: not a stack from the
 * kernel for ticks.
 */
static void adopt(struct world *w, int i)
{
	sample(w, i, PBP_F_TSTATE_FOUND, 0, KERNEL_DEPTH, 0);
}

#endif
