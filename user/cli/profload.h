/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_PROFLOAD_H
#define PBP_CLI_PROFLOAD_H

#include <argp.h>
#include <stdio.h>

struct agg;

/*
 * Read a profile pybpfprof wrote and that keeps stacks into a: collapsed
 * stacks or pprof, either gzipped or not (the first bytes decide, not the
 * name; see read/profread.c). path NULL or "-" is stdin. Says what
 * went wrong in one line and returns the exit code (EXIT_OK; EXIT_IO:
 * unreadable, or damaged gzip data such as a stream cut short; EXIT_USAGE:
 * not such a profile; EXIT_INTERNAL: out of memory).
 */
int profile_load(const char *path, struct agg *a);
/*
 * -F HZ and -m MODE of a profile read back (convert, diff): what the file
 * does not say. Sets *hz or *mode, or says why with argp_error().
 */
void profload_meta_option(int key, const char *arg, struct argp_state *st, unsigned *hz, const char **mode);

#endif /* PBP_CLI_PROFLOAD_H */
