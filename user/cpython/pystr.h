/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_PYSTR_H
#define PBP_CPYTHON_PYSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyver;
struct remote;

/*
 * Decode a str object (compact ASCII or compact UCS1/2/4) into UTF-8.
 * Reads through the cache. out is NUL-terminated, truncated to outlen-1.
 */
int pystr_read(struct remote *r, const struct pyver *v, uint64_t addr, char *out, size_t outlen);
/*
 * pystr_read, and the str's cached hash (-1: not computed), read in the
 * same copy as its header, before its characters: a str made since at
 * addr shows -1 there before its characters are written.
 */
int pystr_read_hashed(struct remote *r, const struct pyver *v, uint64_t addr, char *out,
		      size_t outlen, int64_t *hash);
/* The same past the page cache, for a str made since its pages were cached; maxchars at most. */
int pystr_read_fresh(struct remote *r, const struct pyver *v, uint64_t addr, size_t maxchars,
		     char *out, size_t outlen);
/* Decode from an in-memory copy of the object (for fuzzing and unit tests). */
int pystr_decode(const struct pyver *v, const uint8_t *obj, size_t objlen, char *out, size_t outlen);
/* Read a bytes object's contents into a malloc'd buffer (capped at maxlen). */
int pybytes_read(struct remote *r, const struct pyver *v, uint64_t addr, size_t maxlen,
		 uint8_t **out, size_t *outlen);

#endif /* PBP_CPYTHON_PYSTR_H */
