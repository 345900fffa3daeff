/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_ASYNCIO_OFFSETS_H
#define PBP_CPYTHON_ASYNCIO_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyver;

/* Bytes of Py_AsyncioModuleDebugOffsets (3.14): 13 words. */
#define AIO_OFFSETS_SIZE 104

/* Where asyncio keeps its tasks, from the _asyncio module's own table. */
struct aio_layout {
	/* TaskObj */
	uint32_t task_size, task_name, task_awaited_by, task_is_task;
	uint32_t task_awaited_by_is_set, task_coro, task_node;
	/* PyInterpreterState: tasks whose thread ended */
	uint32_t is_tasks_head;
	/* _PyThreadStateImpl: the running loop and task, the thread's tasks */
	uint32_t ts_running_loop, ts_running_task, ts_tasks_head;
	/*
	 * 3.11 to 3.13 (asyncio_legacy.c, from the generated aio_gen_table):
	 * no is_task byte, no awaited_by, no list; a task is an object of the
	 * type task_type, found in asyncio's registries; a frame's stack top
	 * is localsplus[stacktop - 1]. legacy false: none of these is used.
	 */
	bool legacy;
	uint64_t task_type;
	uint32_t task_loop, task_fut_waiter, fr_stacktop, fr_localsplus;
};

/*
 * Validate the .AsyncioDebug section's bytes (len of them) read from the
 * target and fill out. Untrusted input: every field must fit whole inside
 * the struct size the table claims, and the interpreter state's size must
 * be the one _Py_DebugOffsets gave (v->is_size): the two tables describe
 * one build, so a disagreement is corruption or another build's module.
 */
int aio_layout_decode(const struct pyver *v, const void *blob, size_t len, struct aio_layout *out);

#endif /* PBP_CPYTHON_ASYNCIO_OFFSETS_H */
