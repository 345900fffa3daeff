/* SPDX-License-Identifier: MIT */
/*
 * A profile file read back (read/profread.c, core/unzip.c): a gzip
 * stream has to end cleanly, with nothing after it, at every place it
 * could be cut; the formats pybpfprof writes that are not read back, and
 * binary data, are named rather than taken for a bad collapsed line; and
 * the collapsed parser's one rule for empty frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aggregate/aggregate.h"
#include "read/collapsedread.h"
#include "read/profread.h"
#include "core/errors.h"
#include "gzipmem.h"
#include "output/formats.h"
#include "output/writers.h"
#include "unit.h"

#define FEW 150          /* cut at every byte */
#define MANY 10000       /* cut at every STRIDE-th byte: several deflate blocks */
#define STRIDE 997

static int memfd = -1;

/* profile_read of len bytes held in a file, into a fresh aggregate whose total goes to *total. */
static int read_bytes(const void *buf, size_t len, struct profread_fail *f, uint64_t *total)
{
	struct agg *a = agg_new();
	int err;

	CHECK(a != NULL);
	CHECK_EQ_INT(ftruncate(memfd, 0), 0);
	CHECK_EQ_INT(pwrite(memfd, buf, len, 0), (long long)len);
	CHECK_EQ_INT(lseek(memfd, 0, SEEK_SET), 0);
	err = profile_read(a, memfd, f);
	*total = agg_total(a);
	agg_free(a);
	return err;
}

/* n lines of distinct stacks, their counts adding up to *total. */
static char *stacks(unsigned n, size_t *len, uint64_t *total)
{
	char *text = NULL;
	FILE *o = open_memstream(&text, len);

	*total = 0;
	for (unsigned i = 0; i < n; i++) {
		fprintf(o, "main (a.py:1);f%u (b.py:%u);g (c.py:3) %u\n", i, i, 89858 + i);
		*total += 89858 + i;
	}
	fclose(o);
	return text;
}

/* Every cut from the second byte on (one byte, 1f, is not gzip's magic), step apart, is truncated. */
static void test_cuts(unsigned n, size_t step)
{
	struct profread_fail f;
	size_t len, gzlen, cuts = 0, refused = 0;
	uint64_t total, want;
	char *text = stacks(n, &len, &want);
	uint8_t *gz = gzip_bytes(text, len, &gzlen);

	CHECK(gz != NULL);
	CHECK_EQ_INT(read_bytes(gz, gzlen, &f, &total), 0);
	CHECK_EQ_INT(total, want);
	for (size_t cut = 2; cut < gzlen; cut += step, cuts++) {
		int err = read_bytes(gz, cut, &f, &total);

		if (err == -PBP_E_CORRUPT && !strcmp(f.why, "damaged gzip data (truncated)"))
			refused++;
		else
			fprintf(stderr, "cut at %zu of %zu: %d, %s\n", cut, gzlen, err, f.why ? f.why : "");
	}
	CHECK(cuts > 20);
	CHECK_EQ_INT(refused, cuts);
	free(gz);
	free(text);
}

static void test_gzip_end(void)
{
	struct profread_fail f;
	size_t len, gzlen;
	uint64_t total, want;
	char *text = stacks(FEW, &len, &want);
	uint8_t *gz = gzip_bytes(text, len, &gzlen), *two = malloc(2 * gzlen + 1);

	CHECK(gz && two);
	CHECK_EQ_INT(read_bytes(text, len, &f, &total), 0);
	CHECK_EQ_INT(total, want);
	test_cuts(FEW, 1);
	test_cuts(MANY, STRIDE);
	/* Two members are one valid file (cat a.gz b.gz); one byte after them is not. */
	memcpy(two, gz, gzlen);
	memcpy(two + gzlen, gz, gzlen);
	CHECK_EQ_INT(read_bytes(two, 2 * gzlen, &f, &total), 0);
	CHECK_EQ_INT(total, 2 * want);
	two[2 * gzlen] = '\n';
	CHECK_EQ_INT(read_bytes(two, 2 * gzlen + 1, &f, &total), -PBP_E_CORRUPT);
	CHECK_EQ_STR(f.why, "damaged gzip data (bytes after its end)");
	CHECK_EQ_INT(read_bytes(two, gzlen + 1, &f, &total), -PBP_E_CORRUPT);
	CHECK_EQ_STR(f.why, "damaged gzip data (bytes after its end)");
	/* A wrong CRC (the trailer's first byte) is damaged data, as before. */
	gz[gzlen - 8] ^= 1;
	CHECK_EQ_INT(read_bytes(gz, gzlen, &f, &total), -PBP_E_CORRUPT);
	CHECK(f.why && !strncmp(f.why, "damaged gzip data (", 19));
	free(two);
	free(gz);
	free(text);
}

/* Each format pybpfprof writes that is not read back is named. */
static void test_other_formats(void)
{
	static const struct { const char *format, *why; } cases[] = {
		{ "speedscope", "it is speedscope JSON" },
		{ "gecko", "it is a Gecko profile (JSON)" },
		{ "html", "it is an HTML page" },
		{ "svg", "it is an SVG image" },
		{ "pstats", "it is Python pstats (marshal)" },
	};
	const char *text = "main (a.py:1);f (a.py:2) 5\nmain (a.py:1);g (a.py:3) 7\n";
	struct profile_meta m = { .mode = "cpu", .hz = 99, .duration_ns = 1000000000ull };
	struct agg *a = agg_new();
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	struct profread_fail f;
	const char *why;
	size_t lineno, gzlen;
	uint64_t total;
	uint8_t junk[512], *gz;

	CHECK_EQ_INT(collapsed_read(a, in, &lineno, &why), 0);
	fclose(in);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL;
		size_t len = 0;
		FILE *o = open_memstream(&out, &len);

		CHECK_EQ_INT(format_write(format_by_name(cases[i].format), a, &m, o), 0);
		fclose(o);
		CHECK_EQ_INT(read_bytes(out, len, &f, &total), -PBP_E_INVAL);
		CHECK_EQ_INT(f.lineno, 0);
		CHECK_EQ_STR(f.why, cases[i].why);
		/* gzipped, the same; gzipped twice, said so */
		gz = gzip_bytes(out, len, &gzlen);
		CHECK(gz != NULL);
		CHECK_EQ_INT(read_bytes(gz, gzlen, &f, &total), -PBP_E_INVAL);
		CHECK_EQ_STR(f.why, cases[i].why);
		free(out);
		out = (char *)gz;
		gz = gzip_bytes(out, gzlen, &gzlen);
		CHECK(gz != NULL);
		CHECK_EQ_INT(read_bytes(gz, gzlen, &f, &total), -PBP_E_INVAL);
		CHECK_EQ_STR(f.why, "it is gzipped twice");
		free(gz);
		free(out);
	}
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7919 >> 3);
	CHECK_EQ_INT(read_bytes(junk, sizeof(junk), &f, &total), -PBP_E_INVAL);
	CHECK_EQ_STR(f.why, "it is binary data");
	/* A NUL past the first line is that line's fault, with its number. */
	CHECK_EQ_INT(read_bytes("a 1\nb\0c 1\n", 10, &f, &total), -PBP_E_INVAL);
	CHECK_EQ_INT(f.lineno, 2);
	CHECK_EQ_STR(f.why, "it holds a NUL byte");
	/* a raw control byte in a name (another program's stacks) is text still */
	CHECK_EQ_INT(read_bytes("main;f\x01 (a.py:2) 3\n", 19, &f, &total), 0);
	CHECK_EQ_INT(total, 3);
	agg_free(a);
}

/* One rule: every frame holds something besides spaces. */
static void test_empty_frames(void)
{
	static const struct { const char *line, *why; } cases[] = {
		{ "   3\n", "it has no frame" },
		{ " 2\n", "it has no frame" },
		{ "a;;b 1\n", "it has an empty frame" },
		{ ";;; 1\n", "it has an empty frame" },
		{ "a; ;b 1\n", "it has an empty frame" },
		{ "a; 1\n", "it has an empty frame" },
		{ ";a 1\n", "it has an empty frame" },
	};
	struct profread_fail f;
	uint64_t total;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(read_bytes(cases[i].line, strlen(cases[i].line), &f, &total), -PBP_E_INVAL);
		CHECK_EQ_INT(f.lineno, 1);
		CHECK_EQ_STR(f.why, cases[i].why);
	}
	/* spaces inside a frame are a name's */
	CHECK_EQ_INT(read_bytes("a b;c d 2\n", 10, &f, &total), 0);
	CHECK_EQ_INT(total, 2);
}

int main(void)
{
	memfd = memfd_create("profile", MFD_CLOEXEC);
	CHECK(memfd >= 0);
	test_gzip_end();
	test_other_formats();
	test_empty_frames();
	close(memfd);
	return unit_done("test_profread");
}
