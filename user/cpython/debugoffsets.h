/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_DEBUGOFFSETS_H
#define PBP_CPYTHON_DEBUGOFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyver;

/*
 * Validate a raw _Py_DebugOffsets blob (3.13+) read from the target and fill v.
 * Untrusted input: every offset is checked against the sizes it claims.
 */
int pyver_from_debug_offsets(const void *blob, size_t len, struct pyver *v);
/* Bytes of _Py_DebugOffsets to read for validation (largest layout known). */
size_t pyver_debug_offsets_max(void);
/* The newest minor version whose layout is known (14 for 3.14). */
unsigned pyver_newest_minor(void);

#endif /* PBP_CPYTHON_DEBUGOFFSETS_H */
