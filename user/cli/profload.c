/* SPDX-License-Identifier: MIT */
/*
 * A profile file read back, whatever its format; see profload.h.
 *
 * The file goes through zlib, which reads a plain file as it is. Its first
 * bytes decide: pprof starts with its sample types (field 1: byte 0x0a) and
 * holds control bytes collapsed text never has: a NUL (string 0 is "", but
 * the string table may come after the first 4 KiB of samples) or, sooner,
 * the first sample type's length and fields (0x04 0x08 ...).
 * A pprof profile is read whole (protobuf-c unpacks a buffer); collapsed
 * stacks are streamed line by line, the peeked bytes first, so a file of
 * any size reads in the memory its longest line takes.
 */
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
#include <sys/types.h>

#include "cli/profload.h"
#include "aggregate/aggregate.h"
#include "aggregate/convert.h"
#include "aggregate/pprofread.h"
#include "cli/args.h"
#include "core/errors.h"

#define PEEK 4096

struct source {
	gzFile z;
	uint8_t peek[PEEK];
	size_t npeek, used;     /* bytes peeked, and handed out of them */
	int err;                /* -errno of a failed read (EINVAL: damaged gzip data) */
};

/* gzread, with the reason of a failure kept in s->err. */
static ssize_t zread(struct source *s, void *buf, size_t len)
{
	int got, zerr;

	errno = 0;
	if ((got = gzread(s->z, buf, (unsigned)(len > (1u << 30) ? 1u << 30 : len))) >= 0)
		return got;
	gzerror(s->z, &zerr);
	s->err = zerr == Z_ERRNO && errno ? -errno : -EINVAL;
	errno = -s->err;
	return -1;
}

/* fopencookie's read: the peeked bytes, then the rest of the stream. */
static ssize_t cookie_read(void *cookie, char *buf, size_t len)
{
	struct source *s = cookie;

	if (s->used < s->npeek) {
		size_t n = s->npeek - s->used < len ? s->npeek - s->used : len;

		memcpy(buf, s->peek + s->used, n);
		s->used += n;
		return (ssize_t)n;
	}
	return zread(s, buf, len);
}

/* A byte that is neither text nor whitespace: binary data. */
static bool is_control(uint8_t c)
{
	return c < 0x20 && c != '\t' && c != '\n' && c != '\r';
}

static bool looks_pprof(const struct source *s)
{
	size_t head = s->npeek < 8 ? s->npeek : 8;
	bool binary = false;

	for (size_t i = 1; i < head; i++)
		binary |= is_control(s->peek[i]);
	return s->npeek && s->peek[0] == 0x0a && (binary || memchr(s->peek, '\0', s->npeek));
}

static int say_read_error(const char *name, int err)
{
	fprintf(stderr, "pybpfprof: cannot read %s: %s\n", name, err == -EINVAL ? "damaged gzip data" : strerror(-err));
	return EXIT_IO;
}

static int say_nomem(void)
{
	fprintf(stderr, "pybpfprof: out of memory\n");
	return EXIT_INTERNAL;
}

static int load_collapsed(const char *name, struct source *s, struct agg *a)
{
	cookie_io_functions_t io = { .read = cookie_read };
	FILE *in = fopencookie(s, "r", io);
	const char *why = NULL;
	size_t lineno;
	int err;

	if (!in)
		return say_nomem();
	err = collapsed_read(a, in, &lineno, &why);
	fclose(in);
	if (err == -PBP_E_IO)    /* a directory, an I/O error, damaged gzip data */
		return say_read_error(name, s->err ? s->err : -EIO);
	if (err == -PBP_E_INVAL)
		fprintf(stderr, "pybpfprof: %s:%zu: not a collapsed-stack line: %s\n", name, lineno, why);
	return err == -PBP_E_INVAL ? EXIT_USAGE : err ? say_nomem() : EXIT_OK;
}

/* The rest of the stream after the peeked bytes, all of it in memory. */
static int load_pprof(const char *name, struct source *s, struct agg *a)
{
	size_t cap = 1 << 20, n = s->npeek;
	uint8_t *buf = malloc(cap), *p;
	const char *why = NULL;
	ssize_t got = 0;
	int err;

	if (!buf)
		return say_nomem();
	memcpy(buf, s->peek, n);
	do {
		if (n == cap) {
			if (!(p = realloc(buf, cap * 2))) {
				free(buf);
				return say_nomem();
			}
			buf = p, cap *= 2;
		}
		if ((got = zread(s, buf + n, cap - n)) > 0)
			n += (size_t)got;
	} while (got > 0);
	err = got < 0 ? 1 : pprof_read(a, buf, n, &why);
	free(buf);
	if (got < 0)
		return say_read_error(name, s->err);
	if (err == -PBP_E_INVAL)
		fprintf(stderr, "pybpfprof: %s: not a profile pybpfprof reads (collapsed stacks or pprof): %s\n",
			name, why);
	return err == -PBP_E_INVAL ? EXIT_USAGE : err ? say_nomem() : EXIT_OK;
}

int profile_load(const char *path, struct agg *a)
{
	bool std = !path || !strcmp(path, "-");
	const char *name = std ? "stdin" : path;
	int fd = std ? dup(0) : open(path, O_RDONLY | O_CLOEXEC), code;
	struct source *s;
	ssize_t got = 0;

	if (fd < 0)
		return say_read_error(name, -errno);
	if (!(s = calloc(1, sizeof(*s))) || !(s->z = gzdopen(fd, "rb"))) {
		close(fd);
		free(s);
		return say_nomem();
	}
	while (s->npeek < PEEK && (got = zread(s, s->peek + s->npeek, PEEK - s->npeek)) > 0)
		s->npeek += (size_t)got;
	if (got < 0)
		code = say_read_error(name, s->err);
	else
		code = looks_pprof(s) ? load_pprof(name, s, a) : load_collapsed(name, s, a);
	gzclose_r(s->z);
	free(s);
	return code;
}

void profload_meta_option(int key, const char *arg, struct argp_state *st, unsigned *hz, const char **mode)
{
	unsigned long long v;
	int m;

	if (key == 'F' && parse_uint(arg, 1, 100000, &v) == 0)
		*hz = (unsigned)v;
	else if (key == 'F')
		argp_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
	else if ((m = mode_by_name(arg)) >= 0)
		*mode = mode_name(m);
	else
		argp_error(st, "invalid mode '%s' (cpu, wall or gil)", arg);
}
