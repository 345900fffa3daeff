/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_NATLEAF_H
#define PBP_SAMPLE_NATLEAF_H

#include <stdint.h>

#include "pybpfprof.h"
#include "sample/target.h"

/*
 * --native (o.native) and the kernel's copy of the stack there: the whole
 * native stack woven with the Python frames of locs[0..*n). Else a cpu
 * sample of a thread on a CPU without the GIL, in native code: the
 * function it was in (from the registers the kernel took) appended to its
 * stack locs[0..*n) as the leaf, when the collector asks for it
 * (o.native_leaf), the stack has a Python frame and there is room (max).
 */
void target_native_leaf(struct collector *c, struct target *t, const struct pbp_sample *ks,
			uint32_t *locs, uint32_t *n, uint32_t max);

/*
 * --kernel (c->kstacks made) and a sample the kernel took a kernel stack for: its
 * kernel frames appended to locs[0..*n), the innermost, at most max.
 */
void target_kernel_frames(struct collector *c, const struct pbp_sample *ks, uint32_t *locs,
			  uint32_t *n, uint32_t max);

#endif /* PBP_SAMPLE_NATLEAF_H */
