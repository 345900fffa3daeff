/* SPDX-License-Identifier: MIT */
/*
 * A profile file read back, whatever its format; see profread.h.
 *
 * The file goes through core/unzip, which reads a plain file as it is and
 * a gzipped one to its checked end. The first bytes of what it yields
 * decide: pprof starts with its sample types (field 1: byte 0x0a) and holds
 * control bytes collapsed text never has: a NUL (string 0 is "", but the
 * string table may come after the first 4 KiB of samples) or, sooner, the
 * first sample type's length and fields (0x04 0x08 ...). The other formats
 * pybpfprof writes, which keep no stacks to read back, and binary data are
 * named from their start, so they are not taken for collapsed text with a
 * bad first line. A pprof profile is read whole (protobuf-c unpacks a
 * buffer); collapsed stacks are streamed line by line, the peeked bytes
 * first, so a file of any size reads in the memory its longest line takes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "read/profread.h"
#include "read/collapsedread.h"
#include "read/pprofread.h"
#include "core/errors.h"
#include "core/unzip.h"

_Static_assert(sizeof(((struct profread_fail *)0)->text) >= UNZIP_WHY_MAX, "a gzip failure fits");

#define PEEK 4096

struct source {
	struct unzip *u;
	uint8_t peek[PEEK];
	size_t npeek, used;     /* bytes peeked, and handed out of them */
	int err;                /* the failure unzip_read returned, kept for the message */
};

static ssize_t source_read(struct source *s, void *buf, size_t len)
{
	ssize_t got = unzip_read(s->u, buf, len);

	if (got < 0)
		s->err = (int)got;
	return got;
}

/* fopencookie's read: the peeked bytes, then the rest of the stream. */
static ssize_t cookie_read(void *cookie, char *buf, size_t len)
{
	struct source *s = cookie;
	ssize_t got;

	if (s->used < s->npeek) {
		size_t n = s->npeek - s->used < len ? s->npeek - s->used : len;

		memcpy(buf, s->peek + s->used, n);
		s->used += n;
		return (ssize_t)n;
	}
	if ((got = source_read(s, buf, len)) < 0)
		errno = EIO;
	return got < 0 ? -1 : got;
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

static bool starts(const struct source *s, const char *text, bool anycase)
{
	size_t n = strlen(text);

	return s->npeek >= n && !(anycase ? strncasecmp : strncmp)((const char *)s->peek, text, n);
}

/* A count as diff -f collapsed writes it before the end e: digits, maybe ".dd"; its start, or NULL. */
static const char *diff_number(const char *b, const char *e)
{
	const char *q = e;

	while (q > b && isdigit((unsigned char)q[-1]))
		q--;
	if (q > b + 1 && q[-1] == '.' && q < e && isdigit((unsigned char)q[-2])) {
		q--;
		while (q > b && isdigit((unsigned char)q[-1]))
			q--;
	}
	return q < e && isdigit((unsigned char)*q) && q > b && q[-1] == ' ' ? q : NULL;
}

/*
 * diff -f collapsed's "STACK BEFORE AFTER" (flamegraph.pl's differential
 * input): every whole line peeked ends in two counts. Read as collapsed
 * stacks, "...;b 6.67 10" was a frame "b 6.67" of 10 samples, and a line
 * "... 3.33 0" dropped, with exit 0.
 */
static bool differential(const struct source *s)
{
	const char *p = (const char *)s->peek, *end = p + s->npeek;
	size_t lines = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *e, *after, *before;

		if (!eol)
			break;
		e = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (e > p) {
			if (!(after = diff_number(p, e)) || !(before = diff_number(p, after - 1)) || before - 1 == p)
				return false;
			lines++;
		}
		p = eol + 1;
	}
	return lines > 0;
}

/*
 * What the file is when it is not a profile read here, or NULL: the other
 * formats pybpfprof writes (none keeps stacks whole), pstats, gzip in gzip,
 * and binary data: a NUL in the first line, where collapsed text has a
 * frame, or other control bytes in more than one of 16 bytes peeked (other
 * programs' collapsed stacks may hold a few raw ones in names; random bytes
 * hold one in nine). A bad line further on is the collapsed reader's to name.
 */
static const char *other_format(const struct source *s)
{
	const uint8_t *p = s->peek, *eol = memchr(p, '\n', s->npeek);
	size_t first = eol ? (size_t)(eol - p) : s->npeek, control = 0;
	bool binary = memchr(p, '\0', first) != NULL;

	for (size_t i = 0; i < s->npeek; i++)
		control += p[i] && is_control(p[i]);
	binary |= control > s->npeek / 16;
	if (starts(s, "{\"$schema\":", false) && memmem(p, s->npeek, "speedscope", 10))
		return "it is speedscope JSON";
	if (starts(s, "{\"meta\":", false))
		return "it is a Gecko profile (JSON)";
	if (starts(s, "{\"", false) || starts(s, "{\n", false))
		return "it is JSON";
	if (starts(s, "<!DOCTYPE html", true) || starts(s, "<html", true))
		return "it is an HTML page";
	if (starts(s, "<svg", false) || (starts(s, "<?xml", false) && memmem(p, s->npeek, "<svg", 4)))
		return "it is an SVG image";
	if (starts(s, "<?xml", false))
		return "it is XML";
	/* marshal's dict ('{', 0x80 its reference flag) keyed by (file, line, name) tuples */
	if (s->npeek >= 2 && (p[0] | 0x80) == 0xfb && ((p[1] & 0x7f) == '(' || (p[1] & 0x7f) == ')' || p[1] == '0'))
		return "it is Python pstats (marshal)";
	if (s->npeek >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return "it is gzipped twice";
	if (!binary && differential(s))
		return "it is a differential profile (diff -f collapsed: STACK BEFORE AFTER)";
	return binary ? "it is binary data" : NULL;
}

static int read_collapsed(struct source *s, struct agg *a, struct profread_fail *f)
{
	cookie_io_functions_t io = { .read = cookie_read };
	FILE *in = fopencookie(s, "r", io);
	int err = in ? collapsed_read(a, in, &f->lineno, &f->why) : -PBP_E_NOMEM;

	if (in)
		fclose(in);
	if (err == -PBP_E_IO && s->err)         /* the stream's own failure, not the line's */
		err = s->err;
	if (err == -PBP_E_IO && !s->err)
		f->err = EIO;
	return err;
}

/* The rest of the stream after the peeked bytes, all of it in memory. */
static int read_pprof(struct source *s, struct agg *a, struct profread_fail *f)
{
	size_t cap = 1 << 20, n = s->npeek;
	uint8_t *buf = malloc(cap), *p;
	ssize_t got = 1;
	int err = 0;

	if (buf)
		memcpy(buf, s->peek, n);
	while (buf && got > 0) {
		if (n == cap && (p = realloc(buf, cap * 2)))
			buf = p, cap *= 2;
		else if (n == cap)
			break;
		if ((got = source_read(s, buf + n, cap - n)) > 0)
			n += (size_t)got;
	}
	if (!buf || got > 0)
		err = -PBP_E_NOMEM;
	else if (got < 0)
		err = s->err;
	else
		err = pprof_read(a, buf, n, &f->why);
	free(buf);
	return err;
}

int profile_read(struct agg *a, int fd, struct profread_fail *f)
{
	struct source *s = calloc(1, sizeof(*s));
	ssize_t got = 1;
	int err = 0;

	*f = (struct profread_fail){ 0 };
	if (!s || !(s->u = unzip_open(fd)))
		err = -PBP_E_NOMEM;
	while (!err && s->npeek < PEEK && (got = source_read(s, s->peek + s->npeek, PEEK - s->npeek)) > 0)
		s->npeek += (size_t)got;
	if (!err && got < 0)
		err = s->err;
	else if (!err && looks_pprof(s))
		err = read_pprof(s, a, f);
	else if (!err && (f->why = other_format(s)))
		err = -PBP_E_INVAL;
	else if (!err)
		err = read_collapsed(s, a, f);
	if (err == -PBP_E_IO && !f->err)
		f->err = unzip_errno(s->u);
	if (err == -PBP_E_CORRUPT)
		f->why = strcpy(f->text, unzip_why(s->u));
	if (s)
		unzip_close(s->u);
	free(s);
	return err;
}
