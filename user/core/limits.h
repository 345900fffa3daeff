/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_LIMITS_H
#define PBP_CORE_LIMITS_H

/*
 * A stack keeps at most PBP_MAX_DEPTH Python frames: a deeper one keeps its
 * innermost and its outermost frames and one marker frame in between,
 * "[... N frames elided]" (so a profile line has at most PBP_MAX_LOCS
 * locations, root labels and the status leaf counted). A chain is followed
 * to its root up to PBP_MAX_WALK frames; a longer one is taken as corrupt.
 */
#define PBP_MAX_DEPTH 16384
#define PBP_MAX_LOCS (PBP_MAX_DEPTH + 4)
#define PBP_MAX_WALK (1u << 20)

#endif /* PBP_CORE_LIMITS_H */
