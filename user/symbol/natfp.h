/* SPDX-License-Identifier: MIT */
/*
 * --native=fp: the kernel's frame-pointer walk of a sample's user stack
 * (a struct pbp_ustack with PBP_UADDRS_MAGIC) as the native frame list
 * natstack weaves, in the form unwind_stack gives it.
 */
#ifndef PBP_SYMBOL_NATFP_H
#define PBP_SYMBOL_NATFP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pybpfprof.h"

/*
 * pcs[0..*n), innermost first: pcs[0] the walk's first address (the
 * sample's ip), the others return addresses one byte back (into their
 * call, so that they name the caller's line). The list ends at the first
 * address 0; an empty walk gives ip alone. *cut when the walk filled its
 * bound (PBP_UADDRS_MAX) or max: it may have had more. Never fails.
 */
void natfp_pcs(const struct pbp_ustack *u, uint64_t ip, uint64_t *pcs, size_t max, size_t *n,
	       bool *cut);

#endif /* PBP_SYMBOL_NATFP_H */
