/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_DUMP_H
#define PBP_CLI_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pyproc;

int dump_process(struct pyproc *p, FILE *o, bool json);
/*
 * Every asyncio task of p (3.14+), its coroutine chain and awaiters.
 * -PBP_E_VERSION before 3.14; a process without asyncio has no tasks (0).
 */
int dump_async(struct pyproc *p, FILE *o, bool json);

#endif /* PBP_CLI_DUMP_H */
