/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_ASYNCIO_TASKS_H
#define PBP_CPYTHON_ASYNCIO_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "cpython/asyncio_graph.h"
#include "cpython/asyncio_offsets.h"

struct pyproc;
struct pythread;

/*
 * The _asyncio module's table in the target p, validated. -PBP_E_VERSION
 * before 3.14 (no table to read); -PBP_E_NOENT when asyncio is not loaded
 * (no module mapped, or none with an AsyncioDebug section).
 */
int aio_find_layout(struct pyproc *p, struct aio_layout *l);
/*
 * Every task of the threads ts (n of them, from pythreads_read) and of
 * their interpreters' lists into g (aio_graph_init'ed), owner = index in ts.
 */
int aio_read_tasks(struct pyproc *p, const struct aio_layout *l, const struct pythread *ts,
		   size_t n, struct aio_graph *g);
/*
 * The head of the task list of the thread of tstate, its two words (first
 * and last task) into sig[0..1]: one read, no walk. A task made is linked at
 * the tail, so every new task changes sig[1] (unless it took the very
 * address of a last task that ended since); a task that ends changes it
 * only when it was the first or the last.
 */
int aio_list_sig(struct pyproc *p, const struct aio_layout *l, uint64_t tstate, uint64_t sig[2]);
/* The task the thread of tstate runs now (0: none). */
int aio_running_task(struct pyproc *p, const struct aio_layout *l, uint64_t tstate, uint64_t *task);
/*
 * task, then the task awaiting it, and so on (the first task of an
 * awaited-by set): at most max into tasks, *n of them (0: task is none).
 * A cycle ends the chain (-PBP_E_CORRUPT), a failed read too.
 */
int aio_task_chain(struct pyproc *p, const struct aio_layout *l, uint64_t task,
		   uint64_t *tasks, size_t max, size_t *n);
/* The code object of the task's own coroutine frame (0: none readable). */
uint64_t aio_task_code(struct pyproc *p, const struct aio_layout *l, uint64_t task);
/* A task's name ("Task-7" for one still an int), or "<unreadable>"; out NUL-terminated. */
void aio_task_name(struct pyproc *p, uint64_t name, char *out, size_t len);

#endif /* PBP_CPYTHON_ASYNCIO_TASKS_H */
