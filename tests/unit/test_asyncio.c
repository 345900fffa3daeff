/* SPDX-License-Identifier: MIT */
/*
 * The asyncio readers (issue 22): the _asyncio module's table is accepted
 * as 3.14.10 has it and refused when a field leaves its struct or it
 * disagrees with _Py_DebugOffsets; _Py_DebugOffsets gives coroutine and set
 * offsets on 3.14 only; the task graph of the fuzzer's seeds
 * (../fuzz/corpus/asyncio, tests/fuzz/asyncio_seeds.py) is what they hold,
 * and each bad one ends in its counted failure; tasks past the bound are
 * counted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "core/errors.h"
#include "cpython/asyncio_graph.h"
#include "cpython/asyncio_offsets.h"
#include "cpython/debugoffsets.h"
#include "cpython/pyver.h"
#include "fakemem.h"

#define MEM_BASE FAKEMEM_BASE

static uint64_t load64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, 8);
	return v;
}

static int pyver_of(const char *path, struct pyver *v)
{
	size_t len;
	uint8_t *blob = unit_load_file(path, &len);
	int err = blob ? pyver_from_debug_offsets(blob, len, v) : -PBP_E_NOENT;

	free(blob);
	return err;
}

static const uint64_t table_314[13] = {
	168, 136, 96, 108, 109, 128, 152, 225864, 10880, 936, 864, 872, 880,
};

static void test_debug_offsets(void)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_of("data/debug_offsets_3.14.bin", &v), 0);
	CHECK(v.async_ok);
	CHECK_EQ_INT(v.gen_iframe, 72);
	CHECK_EQ_INT(v.gen_frame_state, 67);
	CHECK_EQ_INT(v.fr_stackpointer, 64);
	CHECK_EQ_INT(v.set_used, 24);
	CHECK_EQ_INT(v.set_mask, 32);
	CHECK_EQ_INT(v.set_table, 40);
	CHECK_EQ_INT(pyver_of("data/debug_offsets_3.13.bin", &v), 0);
	CHECK(!v.async_ok);
}

static void test_layout(void)
{
	struct pyver v, v13;
	struct aio_layout l;
	uint64_t t[13];

	CHECK_EQ_INT(pyver_of("data/debug_offsets_3.14.bin", &v), 0);
	CHECK_EQ_INT(aio_layout_decode(&v, table_314, sizeof(table_314), &l), 0);
	CHECK_EQ_INT(l.task_node, 152);
	CHECK_EQ_INT(l.ts_tasks_head, 880);
	CHECK_EQ_INT(l.is_tasks_head, 10880);
	CHECK_EQ_INT(aio_layout_decode(&v, table_314, sizeof(table_314) - 1, &l), -PBP_E_CORRUPT);
	/* Each offset moved to its struct's end no longer fits. */
	for (int w = 0; w < 13; w++) {
		if (w == 0 || w == 7 || w == 9)
			continue;
		memcpy(t, table_314, sizeof(t));
		t[w] = t[w < 7 ? 0 : w < 9 ? 7 : 9];
		CHECK_EQ_INT(aio_layout_decode(&v, t, sizeof(t), &l), -PBP_E_CORRUPT);
		t[w] = UINT64_MAX - 4;
		CHECK_EQ_INT(aio_layout_decode(&v, t, sizeof(t), &l), -PBP_E_CORRUPT);
	}
	/* Another build's interpreter state (3.14d's, 16 bytes more): not this runtime's module. */
	memcpy(t, table_314, sizeof(t));
	t[7] = 225880;
	CHECK_EQ_INT(aio_layout_decode(&v, t, sizeof(t), &l), -PBP_E_CORRUPT);
	CHECK_EQ_INT(pyver_of("data/debug_offsets_3.13.bin", &v13), 0);
	CHECK_EQ_INT(aio_layout_decode(&v13, table_314, sizeof(table_314), &l), -PBP_E_VERSION);
}

/* A seed's graph, read as the harness reads it (the table at its head skipped). */
static int seed_graph(const char *name, struct aio_graph *g)
{
	char path[128];
	size_t len;
	uint8_t *b;
	struct pyver v;
	struct aio_layout l;
	struct fakemem m;
	struct aio_mem am = { fakemem_read, &m };
	struct aio_source src[2] = { { MEM_BASE, MEM_BASE + 0x100, 0 }, { MEM_BASE + 16, 0, -1 } };
	int err;

	snprintf(path, sizeof(path), "../fuzz/corpus/asyncio/%s", name);
	b = unit_load_file(path, &len);
	if (!b || pyver_of("data/debug_offsets_3.14.bin", &v) != 0 ||
	    aio_layout_decode(&v, table_314, sizeof(table_314), &l) != 0) {
		free(b);
		return -PBP_E_NOENT;
	}
	m.b = b + ((b[0] & 1) ? 1 + AIO_OFFSETS_SIZE : 1);
	m.len = len - ((b[0] & 1) ? 1 + AIO_OFFSETS_SIZE : 1);
	err = aio_graph_read(&am, &v, &l, src, 2, g);
	free(b);
	return err;
}

static void test_three(struct aio_graph *g)
{
	CHECK_EQ_INT(seed_graph("three", g), 0);
	CHECK_EQ_INT(g->n, 3);
	if (g->n != 3)
		return;
	CHECK(g->tasks[0].running && !g->tasks[1].running && !g->tasks[2].running);
	CHECK_EQ_INT(g->tasks[0].addr, MEM_BASE + 0x100);
	CHECK_EQ_INT(g->tasks[0].name, MEM_BASE + 0x3000);
	CHECK_EQ_INT(g->tasks[0].nframes, 1);
	CHECK_EQ_INT(g->tasks[0].frames[0].code, MEM_BASE + 0x3f80);   /* tag bit cleared */
	CHECK_EQ_INT(g->tasks[1].nframes, 2);                           /* coroutine awaiting coroutine */
	CHECK_EQ_INT(g->tasks[1].nawaiters, 2);                         /* a set of two and a dummy */
	CHECK_EQ_INT(g->tasks[1].awaiters[0], 0);
	CHECK_EQ_INT(g->tasks[1].awaiters[1], 2);
	CHECK_EQ_INT(g->tasks[1].awaiters_unknown, 1);
	CHECK_EQ_INT(g->tasks[2].nframes, 1);                           /* awaits a future: ends */
	CHECK(!g->tasks[2].chain_cut);
	CHECK(g->tasks[2].awaits != 0 && g->tasks[2].awaits_task == -1);  /* a future, no task */
	CHECK_EQ_INT(g->tasks[0].awaits, 0);                            /* running: no await */
	CHECK_EQ_INT(g->tasks[2].nawaiters, 1);
	CHECK_EQ_INT(g->tasks[2].awaiters[0], 0);
	CHECK_EQ_INT(g->st.list_faults + g->st.chain_faults + g->st.set_faults + g->st.set_corrupt, 0);
	CHECK_EQ_INT(seed_graph("three_table", g), 0);
	CHECK_EQ_INT(g->n, 3);
}

/* A task awaiting a task holds the future's iterator: seen through to the task. */
static void test_future_iter(struct aio_graph *g)
{
	CHECK_EQ_INT(seed_graph("future_iter", g), 0);
	CHECK_EQ_INT(g->n, 3);
	if (g->n != 3)
		return;
	CHECK_EQ_INT(g->tasks[2].awaits, MEM_BASE + 0x300);
	CHECK_EQ_INT(g->tasks[2].awaits_task, 1);
	CHECK_EQ_STR(g->tasks[2].awaits_name, "_asyncio.Task");
	CHECK_EQ_INT(g->tasks[1].awaits_task, -1);          /* a coroutine of another type */
}

/* Before 3.14: a seed's tasks given by address (its first five words), then its gather, if any. */
static int legacy_graph(const char *name, struct aio_graph *g)
{
	char path[128];
	size_t len;
	uint8_t *b;
	struct fakemem m;
	struct aio_mem am = { fakemem_read, &m };
	struct pyver v;
	struct aio_layout l = {
		.legacy = true, .task_type = MEM_BASE + 0x3f60, .task_size = 176, .task_name = 144,
		.task_coro = 136, .task_loop = 16, .task_fut_waiter = 128, .fr_stacktop = 64,
		.fr_localsplus = 72,
	};
	struct aio_given given[5];
	struct aio_gather gs = { 0, 0 };
	int err;

	snprintf(path, sizeof(path), "../fuzz/corpus/asyncio/%s", name);
	b = unit_load_file(path, &len);
	if (!b || len < 73 || pyver_of("data/debug_offsets_3.14.bin", &v) != 0) {
		free(b);
		return -PBP_E_NOENT;
	}
	m = (struct fakemem){ b + 1, len - 1 };
	v.async_ok = false;
	v.k.exec_tag_bits = 0;
	for (int i = 0; i < 5; i++)
		given[i] = (struct aio_given){ load64(b + 1 + 8 * i), 0, i == 0 };
	gs.children = load64(b + 1 + 64);
	err = aio_graph_read_given(&am, &v, &l, given, 5, g);
	if (!err && gs.children)
		err = aio_graph_gathers(&am, &v, &gs, 1, g);
	free(b);
	return err;
}

/* Awaiters derived from what each awaits. */
static void test_legacy(struct aio_graph *g)
{
	CHECK_EQ_INT(legacy_graph("legacy", g), 0);
	CHECK_EQ_INT(g->n, 3);                          /* one listed twice, one no task */
	CHECK_EQ_INT(g->st.not_tasks, 1);
	if (g->n == 3) {
		CHECK(g->tasks[0].running && !g->tasks[1].running);
		CHECK_EQ_INT(g->tasks[1].nframes, 2);
		CHECK_EQ_INT(g->tasks[1].awaits_task, 2);
		CHECK_EQ_INT(g->tasks[2].awaits_task, 2);       /* itself, as a corrupt graph may */
		CHECK_EQ_INT(g->tasks[2].nawaiters, 2);         /* the second, and itself: bounded */
	}
}

/* A gather's children (tasks among those read) are awaited by the gather's awaiter. */
static void test_legacy_gather(struct aio_graph *g)
{
	CHECK_EQ_INT(legacy_graph("legacy_gather", g), 0);
	CHECK_EQ_INT(g->n, 3);
	if (g->n == 3) {
		CHECK_EQ_INT(g->tasks[0].nawaiters, 0);         /* listed among its own children */
		CHECK_EQ_INT(g->tasks[1].nawaiters, 1);
		CHECK_EQ_INT(g->tasks[1].awaiters[0], 0);
		CHECK_EQ_INT(g->tasks[2].nawaiters, 3);         /* the second, itself, the gather's */
		CHECK_EQ_INT(g->tasks[2].awaiters[2], 0);
	}
	CHECK_EQ_INT(g->st.set_faults + g->st.set_corrupt, 0);
	CHECK_EQ_INT(legacy_graph("gather_long", g), 0);
	CHECK_EQ_INT(g->st.set_corrupt, 1);
	CHECK(g->n == 3 && g->tasks[1].nawaiters == 0);
}

static void test_bad(struct aio_graph *g)
{
	CHECK_EQ_INT(seed_graph("list_cycle", g), 0);
	CHECK_EQ_INT(g->n, 3);
	CHECK_EQ_INT(g->st.list_cycles, 1);
	CHECK_EQ_INT(seed_graph("self_await", g), 0);
	CHECK_EQ_INT(g->st.chain_cycles, 1);
	CHECK(g->n == 3 && g->tasks[1].chain_cut && g->tasks[1].nframes == 2);
	CHECK_EQ_INT(seed_graph("deep_chain", g), 0);
	CHECK(g->n == 1 && g->tasks[0].nframes == AIO_MAX_CHAIN && g->tasks[0].chain_cut);
	CHECK_EQ_INT(g->st.chain_long, 1);
	CHECK_EQ_INT(seed_graph("set_mask", g), 0);
	CHECK_EQ_INT(g->st.set_corrupt, 1);
	CHECK(g->n == 3 && g->tasks[1].nawaiters == 0);
}

/*
 * More tasks than a read keeps (issue 30): the first AIO_MAX_TASKS are read,
 * the rest counted in beyond, for the profile to say what it left out.
 */
static void test_beyond(struct aio_graph *g)
{
	const size_t size = 176, n = AIO_MAX_TASKS + 100;
	struct aio_layout l = {
		.legacy = true, .task_type = MEM_BASE + 0x3f60, .task_size = 176, .task_name = 144,
		.task_coro = 136, .task_loop = 16, .task_fut_waiter = 128, .fr_stacktop = 64,
		.fr_localsplus = 72,
	};
	uint8_t *mem = calloc(n, size);
	struct fakemem m = { mem, n * size };
	struct aio_mem am = { fakemem_read, &m };
	struct aio_given *given = calloc(n, sizeof(*given));
	struct pyver v;

	if (!mem || !given || pyver_of("data/debug_offsets_3.14.bin", &v) != 0) {
		CHECK(!"no memory for the tasks, or no 3.14 offsets");
		goto out;
	}
	v.async_ok = false;
	for (size_t i = 0; i < n; i++) {
		uint64_t type = l.task_type;

		memcpy(mem + i * size + v.ob_type, &type, 8);
		given[i] = (struct aio_given){ MEM_BASE + i * size, 0, false };
	}
	CHECK_EQ_INT(aio_graph_read_given(&am, &v, &l, given, n, g), 0);
	CHECK_EQ_INT(g->n, AIO_MAX_TASKS);
	CHECK_EQ_INT(g->st.beyond, 100);
	CHECK_EQ_INT(g->st.list_long, 1);
out:
	free(mem);
	free(given);
}

int main(void)
{
	struct aio_graph g;

	test_debug_offsets();
	test_layout();
	if (aio_graph_init(&g) != 0)
		return 1;
	test_three(&g);
	test_bad(&g);
	test_future_iter(&g);
	test_legacy(&g);
	test_legacy_gather(&g);
	test_beyond(&g);
	aio_graph_free(&g);
	return unit_done("test_asyncio");
}
