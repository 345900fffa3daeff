/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_TLBC_H
#define PBP_CPYTHON_TLBC_H

#include <stddef.h>
#include <stdint.h>

struct pyproc;

/*
 * Free-threaded builds (3.14t): each thread may run its own copy of a code
 * object's bytecode, so a frame's instr_ptr is an offset into one of them.
 */

/*
 * Offset of instr in the copy that holds it, given the copies' starts
 * (entries[0..n), 0 for an unused index). Copies never overlap, so it is the
 * one starting nearest at or below instr; -1 if none does within max bytes.
 */
int64_t tlbc_offset(const uint64_t *entries, size_t n, uint64_t instr, uint64_t max);
/* The same for the code object at code of p, its co_tlbc array read now. */
int64_t tlbc_instr_offset(const struct pyproc *p, uint64_t code, uint64_t instr, uint64_t max);

#endif /* PBP_CPYTHON_TLBC_H */
