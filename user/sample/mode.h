/* SPDX-License-Identifier: MIT */
/*
 * What a sample counts (--mode), and the mode's names: one place for both.
 */
#ifndef PBP_SAMPLE_MODE_H
#define PBP_SAMPLE_MODE_H

/* cpu: threads on a CPU; wall: every thread at every tick; gil: the GIL's holder. */
enum pbp_mode { MODE_CPU, MODE_WALL, MODE_GIL };

/* The mode named "cpu", "wall" or "gil" (any case), or -1. */
int mode_by_name(const char *name);
/* "cpu", "wall" or "gil" for a mode_by_name() result; "?" for another value. */
const char *mode_name(int mode);

#endif /* PBP_SAMPLE_MODE_H */
