/* SPDX-License-Identifier: MIT */
#ifndef PBP_READ_COLLAPSEDREAD_H
#define PBP_READ_COLLAPSEDREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct agg;

/*
 * Read collapsed stacks (as pybpfprof writes them) into a: 0; -PBP_E_INVAL
 * when line *lineno is not a collapsed-stack line, *why saying why;
 * -PBP_E_IO when reading failed (errno says why); -PBP_E_NOMEM.
 */
int collapsed_read(struct agg *a, FILE *in, size_t *lineno, const char **why);

#endif /* PBP_READ_COLLAPSEDREAD_H */
