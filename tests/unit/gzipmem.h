/* SPDX-License-Identifier: MIT */
/*
 * Bytes gzipped in memory, for tests and fuzzers that read gzip streams
 * back (one member, as gzip and pybpfprof's .gz outputs write).
 */
#ifndef GZIPMEM_H
#define GZIPMEM_H
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

/* A malloc'd gzip member of buf (*out_len its length), or NULL. */
static inline uint8_t *gzip_bytes(const void *buf, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = len + len / 100 + 1024;
	uint8_t *out = malloc(cap);
	int ret = Z_ERRNO;

	*out_len = 0;

	if (out && deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
		z.next_in = (uint8_t *)buf, z.avail_in = (uInt)len;
		z.next_out = out, z.avail_out = (uInt)cap;
		ret = deflate(&z, Z_FINISH);
		*out_len = z.total_out;
		deflateEnd(&z);
	}
	if (ret != Z_STREAM_END) {
		free(out);
		out = NULL;
	}
	return out;
}
#endif
