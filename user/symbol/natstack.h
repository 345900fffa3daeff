/* SPDX-License-Identifier: MIT */
/*
 * --native: one sample's native stack merged with its Python frames, in
 * call order. Each activation of the evaluation loop
 * (_PyEval_EvalFrameDefault) in the native stack is replaced by the Python
 * frames it was running: on 3.11+ the frames between two entry frames (the
 * kernel marks them, struct pbp_sample's .entries), before 3.11 one frame
 * per activation. Activations and groups are paired from the innermost.
 * The interpreter's call machinery between them is dropped (natfold.h).
 */
#ifndef PBP_SYMBOL_NATSTACK_H
#define PBP_SYMBOL_NATSTACK_H

#include <stdint.h>

#include "pybpfprof.h"
#include "symbol/native.h"

#define NATIVE_MAX_FRAMES 128   /* native frames unwound per sample, at most */
#define NATIVE_CUT NATIVE_PREFIX "[deeper than 128 native frames]"
#define EVAL_FUNC "_PyEval_EvalFrameDefault"
/* --native: user stack bytes the kernel copies per sample (at most PBP_USTACK_MAX) */
#define NATIVE_STACK_BYTES 8192

struct natstack_stats {
	uint64_t stacks;        /* samples given a native stack */
	uint64_t frames;        /* native frames in them */
	uint64_t cut;           /* deeper than NATIVE_MAX_FRAMES: the outer ones left out */
	uint64_t unpaired;      /* activations and Python frame groups did not match one to one */
	uint64_t folded;        /* call machinery frames dropped (natfold.h) */
	uint64_t cached;        /* frames named from their address's last naming (natcache.h) */
	uint64_t walked_again;  /* stacks whose unwinding a remembered walk finished (unwmemo.h) */
	uint64_t ns;            /* time spent unwinding and merging */
};

/*
 * locs[0..*n): a sample's Python locations, root first, as symbolize made
 * them (the kernel's frames the last s->nframes). Replaced by the merged
 * stack (at most max). u: the kernel's stack copy, or (PBP_UADDRS_MAGIC)
 * its frame-pointer walk. 0 or -PBP_E_NOMEM.
 */
int native_stack(struct natsym *ns, struct natproc *np, const struct pbp_sample *s,
		 const struct pbp_ustack *u, struct agg *a, uint32_t *locs, uint32_t *n,
		 uint32_t max, struct natstack_stats *st);

/*
 * Group starts of py Python frames (root first), kernel frames the last
 * nk: starts[0..return) ascending, starts[0] = 0. With entry marks a group
 * starts at each marked frame, else at every frame.
 */
uint32_t natstack_groups(const struct pbp_sample *s, uint32_t npy, uint32_t *starts);

#endif /* PBP_SYMBOL_NATSTACK_H */
