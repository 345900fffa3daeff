/* SPDX-License-Identifier: MIT */
/*
 * natbench's second unwinder: libunwind (Debian's libunwind-dev) walking a
 * captured stack, as unwind.c does with libdwfl, for the figures in docs/performance.md
 * ("which unwinder"). Not part of pybpfprof.
 */
#ifndef PBP_BENCH_NATUNWIND_H
#define PBP_BENCH_NATUNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbol/unwind.h"

/* 0 or -1 when libunwind cannot make its address space. */
int natunwind_init(void);
/* unwind_stack's contract: return addresses innermost first, one byte into the call. */
int natunwind_stack(const struct ustack_in *in, uint64_t *pcs, size_t max, size_t *n, bool *cut);

#endif /* PBP_BENCH_NATUNWIND_H */
