/* SPDX-License-Identifier: MIT */
#ifndef PBP_OUTPUT_FORMATS_H
#define PBP_OUTPUT_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct agg;
struct output;
struct profile_meta;

/* Index of a format by name ("html") or by a path's extension (collapsed if none matches). */
int format_by_name(const char *name);
int format_by_path(const char *path);
/*
 * The extension of path when it has one no format is written as ("p.foo",
 * "p.hmtl.gz": ".foo", ".hmtl"), copied into ext (size n); NULL when it has
 * a known one or none: a suffix of letters after the last dot of its last
 * component counts, "run.1" or "out" do not.
 */
const char *format_unknown_ext(const char *path, char *ext, size_t n);
const char *format_name(int fmt);
int format_write(int fmt, const struct agg *a, const struct profile_meta *m, FILE *o);
/* Open path for a profile in format fmt (a .gz path: gzipped, unless fmt is already). 0 or -PBP_E_IO. */
int profile_open(struct output *out, int fmt, const char *path);
/* Write the profile to an opened output and commit it, or abort it. 0 or -PBP_E_* (-PBP_E_IO: out->err has the errno). */
int profile_write_to(struct output *out, int fmt, const struct agg *a, const struct profile_meta *m);
/* Both; on failure "cannot write PATH: REASON" has been said. 0 or -PBP_E_*. */
int profile_write(int fmt, const struct agg *a, const struct profile_meta *m, const char *path);

#endif /* PBP_OUTPUT_FORMATS_H */
