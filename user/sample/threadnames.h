/* SPDX-License-Identifier: MIT */
/*
 * When a target's threads' Python names (threading.Thread.name) are read
 * again: threading's registries when its thread list changed (target.c),
 * a name missing then soon after, and a sampled thread's name checked
 * alone from its Thread at each look at an unchanged list.
 */
#ifndef PBP_SAMPLE_THREADNAMES_H
#define PBP_SAMPLE_THREADNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpython/threadname.h"
#include "sample/target.h"

/* A thread threading did not name is looked for in its registries this often. */
#define NAMES_EVERY_NS (30 * 1000000000ull)

struct pythread;

/* Some thread of list (hash h) had no name in names: read them again soon. */
void tnames_again(struct target *t, const struct pythread *list, char (*names)[PBP_NAME_LEN],
		  size_t n, uint64_t h, uint64_t now);
/* The names of an unchanged list still stand (each sampled thread's checked alone). */
bool tnames_hold(struct collector *c, struct target *t, uint64_t now);

#endif /* PBP_SAMPLE_THREADNAMES_H */
