/* SPDX-License-Identifier: MIT */
/*
 * asyncio_offsets.c: the _asyncio module's Py_AsyncioModuleDebugOffsets.
 *
 * CPython 3.14's Modules/_asynciomodule.c places this table in a section
 * named AsyncioDebug of the module's image (on Debian a separate
 * lib-dynload/_asyncio.cpython-314-*.so, loaded when asyncio is imported;
 * built into the binary elsewhere). Unlike _Py_DebugOffsets it has no cookie
 * and no version: three sized blocks of uint64_t words,
 *
 *   asyncio_task_object       size, task_name, task_awaited_by, task_is_task,
 *                             task_awaited_by_is_set, task_coro, task_node
 *   asyncio_interpreter_state size, asyncio_tasks_head
 *   asyncio_thread_state      size, asyncio_running_loop, asyncio_running_task,
 *                             asyncio_tasks_head
 *
 * (3.14.10's release build: 168 136 96 108 109 128 152 / 225864 10880 /
 * 936 864 872 880.) It is read from the target, so it is checked the way
 * debugoffsets.c checks its table before anything is used.
 */
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpython/asyncio_offsets.h"
#include "core/bytes.h"
#include "core/errors.h"
#include "cpython/pyver.h"

enum {
	W_TASK_SIZE, W_TASK_NAME, W_TASK_AWAITED_BY, W_TASK_IS_TASK, W_TASK_AWAITED_BY_IS_SET,
	W_TASK_CORO, W_TASK_NODE,
	W_IS_SIZE, W_IS_TASKS_HEAD,
	W_TS_SIZE, W_TS_RUNNING_LOOP, W_TS_RUNNING_TASK, W_TS_TASKS_HEAD,
	W__COUNT
};

_Static_assert(W__COUNT * 8 == AIO_OFFSETS_SIZE, "13 words");

/* A task is a few hundred bytes; a thread state a few KiB (936 in 3.14). */
#define MAX_TASK_SIZE 4096u
#define MAX_TSTATE_SIZE (1u << 20)

/* One field: its word, the word of its struct's size, and its C width. */
struct afield {
	uint8_t word, size_word, width;
};

static const struct afield fields[] = {
	{ W_TASK_NAME, W_TASK_SIZE, 8 },
	{ W_TASK_AWAITED_BY, W_TASK_SIZE, 8 },
	{ W_TASK_IS_TASK, W_TASK_SIZE, 1 },
	{ W_TASK_AWAITED_BY_IS_SET, W_TASK_SIZE, 1 },
	{ W_TASK_CORO, W_TASK_SIZE, 8 },
	{ W_TASK_NODE, W_TASK_SIZE, 16 },       /* struct llist_node {next, prev} */
	{ W_IS_TASKS_HEAD, W_IS_SIZE, 16 },
	{ W_TS_RUNNING_LOOP, W_TS_SIZE, 8 },
	{ W_TS_RUNNING_TASK, W_TS_SIZE, 8 },
	{ W_TS_TASKS_HEAD, W_TS_SIZE, 16 },
};

static uint64_t word(const uint8_t *b, unsigned i)
{
	return load_u64(b, 8u * i);
}

static int check(const struct pyver *v, const uint8_t *b)
{
	uint64_t task = word(b, W_TASK_SIZE), is = word(b, W_IS_SIZE), ts = word(b, W_TS_SIZE);

	/* The task object starts with a PyObject header; tstate embeds PyThreadState. */
	if (task < 16 || task > MAX_TASK_SIZE || is != v->is_size || ts < v->ts_size ||
	    ts > MAX_TSTATE_SIZE)
		return -PBP_E_CORRUPT;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint64_t off = word(b, fields[i].word);

		if (off >= word(b, fields[i].size_word) ||
		    off + fields[i].width > word(b, fields[i].size_word))
			return -PBP_E_CORRUPT;
	}
	/* The node, name and coroutine lie past the object header (refcount, type). */
	if (word(b, W_TASK_NODE) < 16 || word(b, W_TASK_NAME) < 16 || word(b, W_TASK_CORO) < 16)
		return -PBP_E_CORRUPT;
	return 0;
}

int aio_layout_decode(const struct pyver *v, const void *blob, size_t len, struct aio_layout *out)
{
	const uint8_t *b = blob;
	int err;

	if (!v || !b || !out || len < AIO_OFFSETS_SIZE)
		return -PBP_E_CORRUPT;
	if (!v->async_ok)
		return -PBP_E_VERSION;
	err = check(v, b);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));   /* what 3.14 has not (legacy and its fields): none */
	out->task_size = (uint32_t)word(b, W_TASK_SIZE);
	out->task_name = (uint32_t)word(b, W_TASK_NAME);
	out->task_awaited_by = (uint32_t)word(b, W_TASK_AWAITED_BY);
	out->task_is_task = (uint32_t)word(b, W_TASK_IS_TASK);
	out->task_awaited_by_is_set = (uint32_t)word(b, W_TASK_AWAITED_BY_IS_SET);
	out->task_coro = (uint32_t)word(b, W_TASK_CORO);
	out->task_node = (uint32_t)word(b, W_TASK_NODE);
	out->is_tasks_head = (uint32_t)word(b, W_IS_TASKS_HEAD);
	out->ts_running_loop = (uint32_t)word(b, W_TS_RUNNING_LOOP);
	out->ts_running_task = (uint32_t)word(b, W_TS_RUNNING_TASK);
	out->ts_tasks_head = (uint32_t)word(b, W_TS_TASKS_HEAD);
	return 0;
}
