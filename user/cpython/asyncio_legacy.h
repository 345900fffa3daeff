/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_ASYNCIO_LEGACY_H
#define PBP_CPYTHON_ASYNCIO_LEGACY_H

#include <stddef.h>
#include <stdint.h>

#include "cpython/asyncio_graph.h"
#include "cpython/asyncio_offsets.h"

struct pyproc;
struct pythread;

/*
 * 3.11 to 3.13: the task layout of p (from the generated table, checked
 * against the C task type's size) and asyncio.tasks' module dict *md, of
 * the interpreter interp. -PBP_E_VERSION: another version, another build's
 * layout, or pure-Python tasks; -PBP_E_NOENT: asyncio not imported.
 */
int aio_legacy_find(struct pyproc *p, uint64_t interp, struct aio_layout *l, uint64_t *md);
/* Every task in asyncio's registries into g, owner = index in ts of its loop's thread (-1: none). */
int aio_legacy_tasks(struct pyproc *p, const struct aio_layout *l, uint64_t md,
		     const struct pythread *ts, size_t n, struct aio_graph *g);

/*
 * The sets under asyncio's registries of the module dict md, for
 * aio_legacy_sig: the scheduled tasks' WeakSet's set (3.11: all tasks'),
 * and (3.12, 3.13) the eager tasks' set, else 0. 0, or -PBP_E_NOENT when
 * the first is not found.
 */
int aio_legacy_registries(struct pyproc *p, uint64_t md, uint64_t sets[2]);
/*
 * Each set's fill, used, mask and table into sig[4 * i ..] (0s for a set 0):
 * one read a set, no walk. A task added raises used, and fill unless it
 * took a slot a removed one left (a dummy); a task removed (freed: the
 * WeakSet drops its reference) lowers used. So only a removal and an
 * addition into a dummy slot between two looks leave every word as it was.
 */
int aio_legacy_sig(struct pyproc *p, const uint64_t sets[2], uint64_t sig[8]);

/*
 * The task the loop of the thread whose threading ident is ident runs now
 * (_current_tasks' value for the loop whose _thread_id is ident): 0, with
 * *task 0 when none runs there.
 */
int aio_legacy_running(struct pyproc *p, const struct aio_layout *l, uint64_t md, uint64_t ident,
		       uint64_t *task);

#endif /* PBP_CPYTHON_ASYNCIO_LEGACY_H */
