/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the asyncio readers: aio_layout_decode() (the
 * _asyncio module's AsyncioDebug table) and aio_graph_read() (task lists,
 * coroutine chains, awaited-by sets), over arbitrary bytes standing for
 * the target's memory.
 *
 *   make fuzz            (all harnesses; see the Makefile)
 *   build/fuzz/fuzz_asyncio -max_total_time=60 /tmp/aio tests/fuzz/corpus/asyncio
 *
 * Input layout:
 *   byte 0      odd: bytes 1..104 are an AsyncioDebug table, decoded, and
 *               used when accepted (else 3.14.10's); 2: 3.12's layout read
 *               by aio_graph_read_given (legacy(), below), then a gather's
 *               children joined by aio_graph_gathers; other even:
 *               3.14.10's table
 *   the rest    memory at MEM_BASE (after the table when there is one);
 *               anything outside it is unmapped. The thread's task list is
 *               headed at MEM_BASE, the interpreter's at MEM_BASE + 16, and
 *               the thread's running task is MEM_BASE + 0x100.
 *
 * It aborts when an accepted table puts a field outside the size it claims,
 * or the graph breaks its bounds: more than AIO_MAX_TASKS tasks, a chain
 * longer than AIO_MAX_CHAIN, an awaiter index out of range or repeated, one
 * task twice, a running task other than the running one, an awaited task
 * out of range or an awaited type's name not ended.
 *
 * Seeds (tests/fuzz/corpus/asyncio/, made by tests/fuzz/asyncio_seeds.py):
 * a list of three tasks (one running, one awaited by a set of two, one
 * by a single task) with chained coroutines; the same with its table; a
 * list that loops back into itself; a coroutine awaiting itself; a chain
 * deeper than the bound; a set with an absurd mask; a task awaiting another
 * through a future's iterator (_asyncio.FutureIter, seen through); 3.12's
 * tasks with a gather's list of children (two tasks, an object that is
 * none, the awaiter itself), and one whose length is absurd.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "cpython/asyncio_graph.h"
#include "cpython/asyncio_offsets.h"
#include "cpython/pyver.h"
#include "../unit/fakemem.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

#define MEM_BASE FAKEMEM_BASE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The _Py_DebugOffsets facts the readers use, as 3.14.10's release build has them. */
static void pyver_314(struct pyver *v)
{
	memset(v, 0, sizeof(*v));
	v->major = 3;
	v->minor = 14;
	v->is_size = 225864;
	v->ts_size = 832;
	v->ob_type = 8;
	v->fr_size = 88;
	v->k.fr_code = 0;
	v->k.fr_instr = 56;
	v->k.exec_tag_bits = 3;
	v->fr_stackpointer = 64;
	v->gen_iframe = 72;
	v->gen_frame_state = 67;
	v->set_used = 24;
	v->set_table = 40;
	v->set_mask = 32;
	v->async_ok = true;
}

/* 3.14.10's AsyncioDebug words. */
static const struct aio_layout layout_314 = {
	.task_size = 168, .task_name = 136, .task_awaited_by = 96, .task_is_task = 108,
	.task_awaited_by_is_set = 109, .task_coro = 128, .task_node = 152,
	.is_tasks_head = 10880,
	.ts_running_loop = 864, .ts_running_task = 872, .ts_tasks_head = 880,
};

static void check_layout(const struct aio_layout *l)
{
	MUST(l->task_size >= 16 && l->task_size <= 4096);
	MUST(l->task_name + 8 <= l->task_size && l->task_coro + 8 <= l->task_size);
	MUST(l->task_awaited_by + 8 <= l->task_size && l->task_node + 16 <= l->task_size);
	MUST(l->task_is_task < l->task_size && l->task_awaited_by_is_set < l->task_size);
}

static void check_graph(const struct aio_graph *g, uint64_t running)
{
	MUST(g->n <= AIO_MAX_TASKS);
	for (size_t i = 0; i < g->n; i++) {
		const struct aio_task *t = &g->tasks[i];

		MUST(t->nframes <= AIO_MAX_CHAIN && t->nawaiters <= AIO_MAX_AWAITERS);
		MUST(!t->running || t->addr == running);
		MUST(t->awaits_task >= -1 && t->awaits_task < (int32_t)g->n);
		MUST(memchr(t->awaits_name, 0, sizeof(t->awaits_name)) != NULL);
		for (size_t k = 0; k < i; k++)
			MUST(g->tasks[k].addr != t->addr);
		for (unsigned a = 0; a < t->nawaiters; a++) {
			MUST(t->awaiters[a] < g->n);
			for (unsigned b = 0; b < a; b++)
				MUST(t->awaiters[a] != t->awaiters[b]);
		}
	}
}

/*
 * Before 3.14 (byte 0 == 2): 3.12's layout (the generated table's), no
 * list: the task addresses are the memory's first eight words, the first
 * running; a task is an object of type LEGACY_TASK_TYPE. The ninth word,
 * when not 0, is a gather's list of children the first task awaits.
 */
#define LEGACY_TASK_TYPE (MEM_BASE + 0x3f60)

static int legacy(struct aio_graph *g, struct aio_mem *am, const struct fakemem *m)
{
	struct pyver v;
	struct aio_layout l = {
		.legacy = true, .task_type = LEGACY_TASK_TYPE, .task_size = 176, .task_name = 144,
		.task_coro = 136, .task_loop = 16, .task_fut_waiter = 128, .fr_stacktop = 64,
		.fr_localsplus = 72,
	};
	struct aio_given given[8];

	pyver_314(&v);
	v.minor = 12;
	v.async_ok = false;
	v.fr_size = 80;
	v.k.exec_tag_bits = 0;
	for (int i = 0; i < 8; i++) {
		uint64_t a = 0;

		if (m->len >= 8u * (unsigned)i + 8)
			memcpy(&a, m->b + 8 * i, 8);
		given[i] = (struct aio_given){ a, 0, i == 0 };
	}
	MUST(aio_graph_read_given(am, &v, &l, given, 8, g) == 0);
	/* A gather: the first task awaits the children listed by the ninth word's list. */
	if (m->len >= 72) {
		struct aio_gather gs = { 0, 0 };

		memcpy(&gs.children, m->b + 64, 8);
		MUST(aio_graph_gathers(am, &v, &gs, 1, g) == 0);
	}
	check_graph(g, given[0].addr);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct aio_graph g;
	struct pyver v;
	struct aio_layout l = layout_314;
	struct fakemem m;
	struct aio_mem am = { fakemem_read, &m };
	struct aio_source src[2] = {
		{ MEM_BASE, MEM_BASE + 0x100, 0 },
		{ MEM_BASE + 16, 0, -1 },
	};
	size_t skip = 1;

	if (size < 1)
		return 0;
	if (!g.tasks && aio_graph_init(&g) != 0)
		abort();
	if (data[0] == 2) {
		m.b = data + 1;
		m.len = size - 1;
		return legacy(&g, &am, &m);
	}
	pyver_314(&v);
	if (data[0] & 1) {
		struct aio_layout dl;

		if (size < 1 + AIO_OFFSETS_SIZE)
			return 0;
		skip += AIO_OFFSETS_SIZE;
		if (aio_layout_decode(&v, data + 1, AIO_OFFSETS_SIZE, &dl) == 0) {
			check_layout(&dl);
			l = dl;
		}
	}
	m.b = data + skip;
	m.len = size - skip;
	MUST(aio_graph_read(&am, &v, &l, src, 2, &g) == 0);
	check_graph(&g, src[0].running_task);
	return 0;
}
