/* SPDX-License-Identifier: MIT */
/*
 * Numbers never handed out twice in a run (never 0), from one atomic
 * counter: the versions that tell a cache's or an aggregate's contents
 * apart (codecache_version, agg_loc_epoch), drawn on the profiler's thread
 * and the agent's HTTP thread alike.
 */
#ifndef PBP_CORE_UNIQUE_H
#define PBP_CORE_UNIQUE_H

#include <stdint.h>

uint64_t unique_next(void);

#endif /* PBP_CORE_UNIQUE_H */
