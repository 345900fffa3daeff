/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_CONVERT_H
#define PBP_AGGREGATE_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct agg;

/*
 * Read collapsed stacks (as pybpfprof writes them) into a: 0; -1 when line
 * *lineno is not a collapsed-stack line, *why saying why;
 * COLLAPSED_READ_ERROR when reading failed (errno says why); -PBP_E_NOMEM.
 */
#define COLLAPSED_READ_ERROR (-2)
int collapsed_read(struct agg *a, FILE *in, size_t *lineno, const char **why);

#endif /* PBP_AGGREGATE_CONVERT_H */
