/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_LINETABLE_H
#define PBP_CPYTHON_LINETABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Line number of the instruction at byte offset `off` into the bytecode.
 * Returns the line, or -1 where the instruction has no line (or the table
 * is malformed). Never reads outside tab[0..len).
 */
int lt_addr2line(int kind, const uint8_t *tab, size_t len, int firstlineno, int64_t off);

#endif /* PBP_CPYTHON_LINETABLE_H */
