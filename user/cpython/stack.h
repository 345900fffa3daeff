/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_STACK_H
#define PBP_CPYTHON_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pybpfprof.h"

struct codeinfo;
struct pyproc;

/*
 * Walk the frame chain from frame, innermost first, skipping C-stack shims,
 * to its root. Keeps at most max frames in out, *n of them: the whole chain
 * when it fits; else its innermost max - max/2 frames, then its outermost
 * max/2, and *elided says how many were left out between the two (0 when
 * none was). After an error (-PBP_E_CORRUPT for a cycle or a chain deeper
 * than PBP_MAX_WALK, or a read that failed) out holds what was walked so far;
 * for a cycle (*looped set, when looped is not NULL), the frames into it and
 * one lap of it, where it began within the innermost 512 links and the
 * innermost frames kept hold it.
 */
int stack_walk(struct pyproc *p, uint64_t frame, struct pbp_frame *out, size_t max, size_t *n,
	       size_t *elided, bool *looped);
/* The marker frame's name for n frames left out, into buf. */
const char *elided_name(char *buf, size_t len, size_t n);
/* Line of a frame from its raw instr value, -1 if unknown. */
int frame_line(const struct pyproc *p, const struct codeinfo *ci, uint64_t instr);

#endif /* PBP_CPYTHON_STACK_H */
