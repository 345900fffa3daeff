/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_ARGS_H
#define PBP_CLI_ARGS_H

#include <stdbool.h>
#include <sys/types.h>

struct argp_state;

/* Decimal digits only (no sign, space or junk), within [min, max]: 0, else -PBP_E_INVAL. */
int parse_uint(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out);
/* A finite decimal number of seconds (1.5, 2e3; no sign, hex, inf or nan) in [min, max]: 0, else -PBP_E_INVAL. */
int parse_seconds(const char *s, double min, double max, double *out);
/* A process id, 1 to INT_MAX: 0, else -PBP_E_INVAL. */
int parse_pid(const char *s, pid_t *pid);
/* -o's value, refused (exit 2) when empty: "" would read as "cannot write : No such file". */
const char *output_path(struct argp_state *st, const char *arg);
/*
 * At the end of parsing: without -f (format_given false), an -o path whose
 * extension no format has is a usage error (exit 2) naming -f, not a file
 * of collapsed stacks under a name that says otherwise.
 */
void output_format_check(struct argp_state *st, const char *path, bool format_given);
/* -i's (or diff's BEFORE/AFTER) FILE; an empty one is a usage error, as for -o. */
const char *input_path(struct argp_state *st, const char *what, const char *arg);

#endif /* PBP_CLI_ARGS_H */
