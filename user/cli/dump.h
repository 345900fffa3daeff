/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_DUMP_H
#define PBP_CLI_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pyproc;

int dump_process(struct pyproc *p, FILE *o, bool json);

#endif /* PBP_CLI_DUMP_H */
