/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_CLOCK_H
#define PBP_CORE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns: every deadline and duration of a run. */
uint64_t mono_ns(void);
/* CLOCK_REALTIME in ns: when a window started, for the profile and a profile store. */
uint64_t wall_ns(void);

#endif /* PBP_CORE_CLOCK_H */
