/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_THREADNAME_H
#define PBP_CPYTHON_THREADNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyproc;
struct pythread;
struct pythread_name;

/*
 * Python names of the threads of the interpreter at interp, read from its
 * threading module (_active, then _limbo): *n pairs written, at most max.
 * 0 on success, even when some threads' names could not be read (they are
 * left out); -PBP_E_NOENT when threading is not imported; other -PBP_E_*
 * when the way to it cannot be read. Callers fall back to the kernel's comm.
 * Strings and types are read through the page cache: call it at the start of
 * an epoch (remote_invalidate_all). Where threading is is remembered in p
 * (checked on each call); _active itself is read anew every time.
 */
int pythread_names(struct pyproc *p, uint64_t interp, struct pythread_name *out, size_t max,
		   size_t *n);
/*
 * Python names of the threads ts[0..n): names[i], "" where unknown; one read
 * per interpreter. objs (NULL: not wanted) gets the Thread object each name
 * was read from, 0 where none.
 */
#define PBP_NAME_LEN 64
void pythreads_name_all(struct pyproc *p, const struct pythread *ts, size_t n,
			char (*names)[PBP_NAME_LEN], uint64_t *objs);
/*
 * Whether the Thread object at thread, found by pythread_names and whose
 * thread still runs, has the name name now: one attribute and one string
 * read, no walk of threading's registries. false when it cannot be read.
 */
bool pythread_name_same(struct pyproc *p, uint64_t thread, const char *name);

#endif /* PBP_CPYTHON_THREADNAME_H */
