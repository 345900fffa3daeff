/* SPDX-License-Identifier: MIT */
/*
 * A file read through gzip, its end checked; see unzip.h.
 *
 * zlib's gzread takes a stream that stops mid-member as a short file (it
 * only notes Z_BUF_ERROR, which nothing asks for) and skips whatever
 * follows the last member when it is not a gzip header, so a cut profile
 * read back as a smaller one. Here inflate is driven directly: the end of
 * the input has to meet the end of a member, and what follows a member has
 * to be another one (`cat a.gz b.gz` is a valid gzip file).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/unzip.h"
#include "core/errors.h"

#define IN_SIZE (64 * 1024)
#define OUT_MAX ((size_t)1 << 30)      /* inflate counts in uInt */

struct unzip {
	int fd;
	bool started;           /* the first bytes were read and looked at */
	bool gzip, inflating;   /* inflating: z is initialised */
	bool in_eof;            /* read() said end of file */
	bool member_done;       /* the last inflate ended a member */
	int fail;               /* sticky: 0 or -PBP_E_* */
	int err;                /* errno of -PBP_E_IO */
	char why[UNZIP_WHY_MAX];
	z_stream z;             /* next_in/avail_in: bytes of in[] not used yet, gzip or not */
	uint8_t in[IN_SIZE];
};

static ssize_t fail(struct unzip *u, int err, int errnum, const char *zmsg)
{
	u->fail = err;
	u->err = errnum;
	snprintf(u->why, sizeof(u->why), "damaged gzip data%s%s%s", zmsg ? " (" : "", zmsg ? zmsg : "", zmsg ? ")" : "");
	return err;
}

/* More input after what is left in in[]: 0 (in_eof set at the end) or the failure. */
static int fill(struct unzip *u)
{
	ssize_t got;

	if (u->z.avail_in && u->z.next_in != u->in)
		memmove(u->in, u->z.next_in, u->z.avail_in);
	u->z.next_in = u->in;
	do
		got = read(u->fd, u->in + u->z.avail_in, IN_SIZE - u->z.avail_in);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return (int)fail(u, -PBP_E_IO, errno, NULL);
	u->in_eof = got == 0;
	u->z.avail_in += (uInt)got;
	return 0;
}

/* The first two bytes decide; a file shorter than that is not gzip. */
static int start(struct unzip *u)
{
	int err = 0;

	u->started = true;
	while (!err && u->z.avail_in < 2 && !u->in_eof)
		err = fill(u);
	if (err)
		return err;
	u->gzip = u->z.avail_in >= 2 && u->in[0] == 0x1f && u->in[1] == 0x8b;
	if (!u->gzip)
		return 0;
	/* 15 + 16: gzip only (a zlib stream is not a .gz file) */
	if (inflateInit2(&u->z, 15 + 16) != Z_OK)
		return (int)fail(u, -PBP_E_NOMEM, 0, NULL);
	u->inflating = true;
	return 0;
}

static ssize_t plain_read(struct unzip *u, uint8_t *buf, size_t len)
{
	ssize_t got;

	if (u->z.avail_in) {
		size_t n = u->z.avail_in < len ? u->z.avail_in : len;

		memcpy(buf, u->z.next_in, n);
		u->z.next_in += n;
		u->z.avail_in -= (uInt)n;
		return (ssize_t)n;
	}
	if (u->in_eof)
		return 0;
	do
		got = read(u->fd, buf, len);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return fail(u, -PBP_E_IO, errno, NULL);
	u->in_eof = got == 0;
	return got;
}

/* After a member: the clean end, or the next member's header. 1: go on; 0: the end. */
static int next_member(struct unzip *u)
{
	int err = 0;

	while (!err && u->z.avail_in < 2 && !u->in_eof)
		err = fill(u);
	if (err)
		return err;
	if (u->z.avail_in == 0)
		return 0;
	if (u->z.avail_in < 2 || u->z.next_in[0] != 0x1f || u->z.next_in[1] != 0x8b)
		return (int)fail(u, -PBP_E_CORRUPT, 0, "bytes after its end");
	inflateReset(&u->z);
	u->member_done = false;
	return 1;
}

static ssize_t gzip_read(struct unzip *u, uint8_t *buf, size_t len)
{
	for (;;) {
		int r;
		size_t got;

		if (u->member_done && (r = next_member(u)) <= 0)
			return r;
		if (u->z.avail_in == 0 && u->in_eof)
			return fail(u, -PBP_E_CORRUPT, 0, "truncated");
		if (u->z.avail_in == 0 && (r = fill(u)) != 0)
			return r;
		if (u->z.avail_in == 0)
			continue;       /* in_eof now: truncated, said above */
		u->z.next_out = buf;
		u->z.avail_out = (uInt)len;
		r = inflate(&u->z, Z_NO_FLUSH);
		got = len - u->z.avail_out;
		if (r == Z_MEM_ERROR)
			return fail(u, -PBP_E_NOMEM, 0, NULL);
		/* Z_BUF_ERROR with input left and room for output: no progress possible */
		if (r != Z_OK && r != Z_STREAM_END && (r != Z_BUF_ERROR || u->z.avail_in))
			return fail(u, -PBP_E_CORRUPT, 0, r == Z_DATA_ERROR && u->z.msg ? u->z.msg : NULL);
		u->member_done = r == Z_STREAM_END;
		if (got)
			return (ssize_t)got;
	}
}

struct unzip *unzip_open(int fd)
{
	struct unzip *u = calloc(1, sizeof(*u));

	if (u) {
		u->fd = fd;
		u->z.next_in = u->in;
	}
	return u;
}

ssize_t unzip_read(struct unzip *u, void *buf, size_t len)
{
	if (!u->fail && !u->started)
		start(u);
	if (u->fail)
		return u->fail;
	if (len == 0)
		return 0;
	len = len < OUT_MAX ? len : OUT_MAX;
	return u->gzip ? gzip_read(u, buf, len) : plain_read(u, buf, len);
}

int unzip_errno(const struct unzip *u)
{
	return u->err;
}

const char *unzip_why(const struct unzip *u)
{
	return u->why;
}

void unzip_close(struct unzip *u)
{
	if (u && u->inflating)
		inflateEnd(&u->z);
	free(u);
}
