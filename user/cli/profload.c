/* SPDX-License-Identifier: MIT */
/* A profile file read back, whatever its format; see profload.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "cli/profload.h"
#include "aggregate/aggregate.h"
#include "aggregate/convert.h"
#include "aggregate/pprofread.h"
#include "core/errors.h"

struct bytes_buf {
	uint8_t *p;
	size_t n, cap;
};

/* The whole file, gunzipped if it is gzip (zlib reads plain files as they are): 0 or -errno. */
static int slurp(int fd, struct bytes_buf *b)
{
	gzFile z = gzdopen(fd, "rb");
	int got = 0, err = 0;

	if (!z) {
		close(fd);
		return -ENOMEM;
	}
	do {
		if (b->n + 65536 > b->cap) {
			size_t ncap = b->cap ? b->cap * 2 : 1 << 20;
			uint8_t *p = realloc(b->p, ncap + 1);

			if (!p) {
				err = -ENOMEM;
				break;
			}
			b->p = p, b->cap = ncap;
		}
		errno = 0;
		got = gzread(z, b->p + b->n, 65536);
		if (got > 0)
			b->n += (size_t)got;
	} while (got > 0);
	if (!err && got < 0) {
		int zerr;

		gzerror(z, &zerr);
		err = zerr == Z_ERRNO && errno ? -errno : -EINVAL;   /* EINVAL: a damaged gzip stream */
	}
	gzclose_r(z);
	return err;
}

static int load_collapsed(const char *name, struct bytes_buf *b, struct agg *a)
{
	FILE *in = b->n ? fmemopen(b->p, b->n, "r") : NULL;
	const char *why = NULL;
	size_t lineno;
	int err;

	if (!b->n)
		return EXIT_OK;         /* an empty file: no stacks (fmemopen wants a size) */
	if (!in) {
		fprintf(stderr, "pybpfprof: out of memory\n");
		return EXIT_INTERNAL;
	}
	err = collapsed_read(a, in, &lineno, &why);
	fclose(in);
	if (err == -1)
		fprintf(stderr, "pybpfprof: %s:%zu: not a collapsed-stack line: %s\n", name, lineno, why);
	else if (err)
		fprintf(stderr, "pybpfprof: out of memory\n");
	return err == -1 ? EXIT_USAGE : err ? EXIT_INTERNAL : EXIT_OK;
}

static int load_pprof(const char *name, struct bytes_buf *b, struct agg *a)
{
	const char *why = NULL;
	int err = pprof_read(a, b->p, b->n, &why);

	if (err == -1)
		fprintf(stderr, "pybpfprof: %s: not a profile pybpfprof reads (collapsed stacks or pprof): %s\n",
			name, why);
	else if (err)
		fprintf(stderr, "pybpfprof: out of memory\n");
	return err == -1 ? EXIT_USAGE : err ? EXIT_INTERNAL : EXIT_OK;
}

int profile_load(const char *path, struct agg *a)
{
	bool std = !path || !strcmp(path, "-");
	const char *name = std ? "stdin" : path;
	int fd = std ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
	struct bytes_buf b = { 0 };
	int err = fd < 0 ? -errno : slurp(fd, &b), code;

	if (err == -ENOMEM) {
		fprintf(stderr, "pybpfprof: out of memory\n");
		code = EXIT_INTERNAL;
	} else if (err) {
		fprintf(stderr, "pybpfprof: cannot read %s: %s\n", name,
			err == -EINVAL ? "damaged gzip data" : strerror(-err));
		code = EXIT_IO;
	} else {
		code = b.n && memchr(b.p, '\0', b.n) ? load_pprof(name, &b, a) : load_collapsed(name, &b, a);
	}
	free(b.p);
	return code;
}
