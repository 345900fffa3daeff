/* SPDX-License-Identifier: MIT */
#ifndef PBP_READ_PPROFREAD_H
#define PBP_READ_PPROFREAD_H

#include <stddef.h>
#include <stdint.h>

struct agg;

/*
 * Read a pprof profile (profile.proto, already gunzipped: buf, len) into a,
 * as pybpfprof wrote it or any other program did: 0; -PBP_E_INVAL when buf is
 * not a pprof profile or one pybpfprof cannot use, *why saying why; -PBP_E_NOMEM.
 *
 * Each sample's lines (leaf first in pprof, inlined lines too) become Python
 * frames root first, "name (file:line)"; its count is the value of the
 * "samples" sample type (else the first). The labels pybpfprof writes give
 * the stack its tags: thread_id, pid, status, and thread_name the thread's
 * name. They are not made into label frames again: which ones the profile
 * had as frames is not recorded in pprof.
 */
int pprof_read(struct agg *a, const uint8_t *buf, size_t len, const char **why);

#endif /* PBP_READ_PPROFREAD_H */
