// SPDX-License-Identifier: MIT
/*
 * user/cpython/linetable.c against the interpreters themselves: every
 * data/linevectors-*.txt (written by scripts/gen-linevectors.py, one per
 * CPython version) gives real line tables and the line CPython reports for
 * every byte offset. Hand-made tables then cover what compilers never emit:
 * truncation, corruption, overflow, offsets out of range.
 *
 * Tables are copied into buffers of their exact size so that, under ASan,
 * reading one byte too far is an error rather than luck.
 */
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include "cpython/linetable.h"
#include "cpython/pyver.h"
#include "unit.h"

/* Mismatches reported in full; past this only counted, to keep logs short. */
#define MAX_REPORTS 20
static int reports;

/* Record one comparison without printing thousands of lines on a bad day. */
static void check_line(const char *what, const char *name, int64_t off, int got, int want)
{
	if (got == want) {
		unit_passed++;
		return;
	}
	unit_failed++;
	if (reports++ < MAX_REPORTS)
		fprintf(stderr, "%s: %s offset %lld: got %d, expected %d\n",
			what, name, (long long)off, got, want);
}

/* ----------------------------------------------------- vector files */

struct vfile {
	const char *path;
	char version[32];
	int kind;
	/* current code object */
	char name[256];
	int first;
	long nbytes;
	uint8_t *tab;
	size_t len;
	/* totals */
	long codes, offsets;
};

static int kind_from_name(const char *s)
{
	if (!strcmp(s, "lnotab"))
		return LT_LNOTAB;
	if (!strcmp(s, "linetable310"))
		return LT_LINETABLE310;
	if (!strcmp(s, "locations"))
		return LT_LOCATIONS;
	return -1;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Exact-size copy of the table ("-" is the empty table). */
static int parse_table(struct vfile *v, const char *hex)
{
	size_t n = strcmp(hex, "-") ? strlen(hex) : 0;

	free(v->tab);
	v->tab = NULL;
	v->len = n / 2;
	if (n % 2)
		return -1;
	if (!n)
		return 0;
	v->tab = malloc(v->len);
	if (!v->tab)
		return -1;
	for (size_t i = 0; i < v->len; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		v->tab[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* "code NAME FIRSTLINENO NBYTES HEX" */
static int parse_code(struct vfile *v, char *rest)
{
	char *save, *name = strtok_r(rest, " ", &save);
	char *first = strtok_r(NULL, " ", &save);
	char *nbytes = strtok_r(NULL, " ", &save);
	char *hex = strtok_r(NULL, " \n", &save);

	if (!name || !first || !nbytes || !hex)
		return -1;
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->first = atoi(first);
	v->nbytes = atol(nbytes);
	v->codes++;
	return parse_table(v, hex);
}

/* "lines L1xN1 L2xN2 ...": one expected line per byte offset from 0. */
static int check_lines(struct vfile *v, char *rest)
{
	char *save, *tok;
	int64_t off = 0;

	for (tok = strtok_r(rest, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		int want;
		long count;

		if (sscanf(tok, "%dx%ld", &want, &count) != 2 || count <= 0)
			return -1;
		for (long i = 0; i < count; i++, off++) {
			int got = lt_addr2line(v->kind, v->tab, v->len, v->first, off);
			check_line(v->version, v->name, off, got, want);
			v->offsets++;
		}
	}
	return off == v->nbytes ? 0 : -1;
}

/* "edge AT_MINUS_2 AT_END AT_END_PLUS_1000": outside the bytecode. */
static int check_edges(struct vfile *v, char *rest)
{
	int want[3];
	int64_t offs[3] = { -2, v->nbytes, v->nbytes + 1000 };

	if (sscanf(rest, "%d %d %d", &want[0], &want[1], &want[2]) != 3)
		return -1;
	for (int i = 0; i < 3; i++) {
		int got = lt_addr2line(v->kind, v->tab, v->len, v->first, offs[i]);
		check_line(v->version, v->name, offs[i], got, want[i]);
		v->offsets++;
	}
	return 0;
}

static int parse_line(struct vfile *v, char *line)
{
	char *sp = strchr(line, ' ');
	char *rest = sp ? sp + 1 : line + strlen(line);

	if (line[0] == '#' || line[0] == '\n')
		return 0;
	if (sp)
		*sp = '\0';
	if (!strcmp(line, "version")) {
		char kind[32];
		if (sscanf(rest, "%31s %31s", v->version, kind) != 2)
			return -1;
		v->kind = kind_from_name(kind);
		return v->kind < 0 ? -1 : 0;
	}
	if (v->kind < 0)
		return -1;      /* records before the version line */
	if (!strcmp(line, "code"))
		return parse_code(v, rest);
	if (!strcmp(line, "lines"))
		return check_lines(v, rest);
	if (!strcmp(line, "edge"))
		return check_edges(v, rest);
	if (!strcmp(line, "end\n") || !strcmp(line, "end"))
		return 0;
	return -1;
}

static void run_file(const char *path)
{
	struct vfile v = { .path = path, .kind = -1 };
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;

	CHECK(f != NULL);
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		if (parse_line(&v, line) < 0) {
			fprintf(stderr, "%s:%ld: malformed vector line\n", path, lineno);
			unit_failed++;
			break;
		}
	}
	free(line);
	free(v.tab);
	fclose(f);
	CHECK(v.codes > 0);
	printf("linetable: %s: CPython %s: %ld code objects, %ld line vectors\n",
	       path, v.version, v.codes, v.offsets);
}

static void test_vector_files(void)
{
	glob_t g;
	int rc = glob("data/linevectors-*.txt", 0, NULL, &g);

	CHECK_EQ_INT(rc, 0);    /* the vectors must be there: run from tests/unit */
	if (rc)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		run_file(g.gl_pathv[i]);
	globfree(&g);
}

/* ------------------------------------------------------ hand-made */

/* lt_addr2line on an exact-size heap copy of a literal table. */
static int a2l(int kind, const uint8_t *lit, size_t len, int first, int64_t off)
{
	uint8_t *tab = len ? malloc(len) : NULL;
	int line;

	if (len && !tab)
		return -99;
	if (len)
		memcpy(tab, lit, len);
	line = lt_addr2line(kind, tab, len, first, off);
	free(tab);
	return line;
}

#define T(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })
/* Head byte of a 3.11+ entry: form and number of code units. */
#define LOC(form, units) (uint8_t)(0x80 | (form) << 3 | ((units) - 1))

static void test_empty(void)
{
	/* lnotab: no pairs means every offset is on the first line. */
	CHECK_EQ_INT(lt_addr2line(LT_LNOTAB, NULL, 0, 7, 0), 7);
	CHECK_EQ_INT(lt_addr2line(LT_LNOTAB, NULL, 0, 7, 1000), 7);
	/* 3.10+: no ranges means no offset has a line. */
	CHECK_EQ_INT(lt_addr2line(LT_LINETABLE310, NULL, 0, 7, 0), -1);
	CHECK_EQ_INT(lt_addr2line(LT_LOCATIONS, NULL, 0, 7, 0), -1);
	/* A NULL table that claims bytes is refused, not read. */
	CHECK_EQ_INT(lt_addr2line(LT_LNOTAB, NULL, 4, 7, 0), -1);
	CHECK_EQ_INT(lt_addr2line(LT_LOCATIONS, NULL, 4, 7, 0), -1);
}

static void test_offsets_outside(void)
{
	int kinds[] = { LT_LNOTAB, LT_LINETABLE310, LT_LOCATIONS };

	/* Before the first instruction CPython reports co_firstlineno. */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(a2l(kinds[i], T(2, 1, 2, 1), 10, -1), 10);
		CHECK_EQ_INT(a2l(kinds[i], T(2, 1, 2, 1), 10, INT64_MIN), 10);
	}
	/* Past the end: lnotab has no end, so the last line sticks. */
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(2, 1, 2, 1), 10, 4), 12);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(2, 1, 2, 1), 10, INT64_MAX), 12);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 1, 2, 1), 10, 3), 12);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 1, 2, 1), 10, 4), -1);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 1, 2, 1), 10, INT64_MAX), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 2), 10, 1), 11);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 2), 10, 2), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 2), 10, INT64_MAX), -1);
	/* Unknown kinds answer nothing. */
	CHECK_EQ_INT(a2l(3, T(2, 1), 10, 0), -1);
	CHECK_EQ_INT(a2l(-1, T(2, 1), 10, 0), -1);
}

static void test_lnotab(void)
{
	/* The line changes only once the offset reaches the pair's address. */
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0, 2, 6, 1, 4, 0xfe), 1, 0), 3);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0, 2, 6, 1, 4, 0xfe), 1, 5), 3);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0, 2, 6, 1, 4, 0xfe), 1, 6), 4);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0, 2, 6, 1, 4, 0xfe), 1, 10), 2);
	/* An odd trailing byte is not half a pair. */
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(2, 1, 9), 1, 100), 2);
	/* 0xff: +255 bytes, -1 line per pair. */
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0xff, 0xff, 0xff, 0xff), 10, 254), 10);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0xff, 0xff, 0xff, 0xff), 10, 255), 9);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0xff, 0xff, 0xff, 0xff), 10, 510), 8);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(0xff, 0xff, 0xff, 0xff), 1, 510), -1);
	/* Leaving int range is corruption, not a wrapped line. */
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(2, 5), INT_MAX - 1, 0), INT_MAX - 1);
	CHECK_EQ_INT(a2l(LT_LNOTAB, T(2, 5), INT_MAX - 1, 2), -1);
}

static void test_linetable310(void)
{
	/* -128 is "no line" and leaves the running line alone. */
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 0x80, 2, 1), 5, 0), -1);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 0x80, 2, 1), 5, 2), 6);
	/* Zero-length ranges only carry line deltas. */
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(0, 127, 0, 127, 4, 10), 1, 0), 265);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(0, 0x81, 4, 0), 200, 3), 73);
	/* A table ending in a zero-length range (CPython asserts) ends there. */
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 1, 0, 1), 5, 2), -1);
	/* An odd trailing byte is ignored. */
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 1, 9), 5, 1), 6);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 1, 9), 5, 2), -1);
	/* 0xff: 255 bytes at line - 1 each. */
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(0xff, 0xff, 0xff, 0xff), 10, 0), 9);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(0xff, 0xff, 0xff, 0xff), 10, 255), 8);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(0xff, 0xff, 0xff, 0xff), 10, 510), -1);
	CHECK_EQ_INT(a2l(LT_LINETABLE310, T(2, 0x7f), INT_MAX - 1, 0), -1);
}

static void test_locations_lines(void)
{
	/* Short form (0-9): same line, columns in the next byte. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(1, 2), 0x23), 4, 3), 4);
	/* One-line forms 10-12: line += form - 10. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(11, 1), 5, 9, LOC(12, 1), 1, 2), 4, 0), 5);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(11, 1), 5, 9, LOC(12, 1), 1, 2), 4, 2), 7);
	/* No-column form: signed varint, low bit is the sign. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 7), 10, 0), 7);
	/* Multi-byte varint: 0x41 0x01 = 1 + 64 = 65 -> -32. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 0x41, 0x01), 100, 0), 68);
	/* No-location entries: no line, and the running line is kept. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(15, 8), LOC(11, 1), 0, 1), 4, 15), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(15, 8), LOC(11, 1), 0, 1), 4, 16), 5);
	/* 0xff is a no-location entry of 8 code units; all of it has no line. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(0xff, 0xff, 0xff), 4, 0), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(0xff, 0xff, 0xff), 4, 47), -1);
	/* A table must start with an entry head (bit 7). */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(0x7f, LOC(13, 1), 2), 4, 0), -1);
	/* Extra bytes in an entry are skipped the way CPython skips them. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 2, 5, 5, LOC(13, 1), 2), 4, 2), 6);
}

static void test_locations_malformed(void)
{
	/* Truncated varints: at the end of the table, and at the next head. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1)), 4, 0), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 0x41), 4, 0), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(14, 1), 0x40, LOC(13, 1), 2), 4, 0), -1);
	/* Entries before the damage still answer. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 2, LOC(13, 1), 0x41), 4, 0), 5);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 2, LOC(13, 1), 0x41), 4, 2), -1);
	/* Varints longer than 32 bits. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
					 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01), 4, 0), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f), 4, 0), -1);
	/* Largest delta, 2^32 - 10 -> +(INT_MAX - 4): fits from 4, not from 5. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 0x76, 0x7f, 0x7f, 0x7f, 0x7f, 0x03), 4, 0),
		     INT_MAX);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(13, 1), 0x76, 0x7f, 0x7f, 0x7f, 0x7f, 0x03), 5, 0), -1);
	/* Truncated column bytes cost the columns, not the line. */
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(14, 1), 2), 4, 0), 5);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(11, 1)), 4, 0), 5);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, T(LOC(3, 1)), 4, 0), 4);
	/* A long run of lone heads: each is a 1..8 unit entry, no crash, ends. */
	uint8_t heads[4096];
	memset(heads, LOC(13, 8), sizeof(heads));
	CHECK_EQ_INT(a2l(LT_LOCATIONS, heads, sizeof(heads), 4, 100), -1);
	memset(heads, 0xff, sizeof(heads));
	CHECK_EQ_INT(a2l(LT_LOCATIONS, heads, sizeof(heads), 4, 16 * 4095), -1);
	CHECK_EQ_INT(a2l(LT_LOCATIONS, heads, sizeof(heads), 4, 16 * 4096), -1);
}

/*
 * Random tables of every kind through exact-size buffers: under ASan this
 * is a small, deterministic cousin of tests/fuzz/fuzz_linetable.c.
 */
static void test_random(void)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	long bad = 0;

	for (int n = 0; n < 20000; n++) {
		uint8_t lit[64];
		size_t len = (size_t)(n % 65);
		for (size_t i = 0; i < len; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			lit[i] = (uint8_t)(s >> 56);
		}
		int64_t off = (int64_t)(s >> 40 & 0x3ff) - 8;
		int first = (int)(s >> 20 & 0xfff);
		for (int kind = LT_LNOTAB; kind <= LT_LOCATIONS; kind++)
			if (a2l(kind, lit, len, first, off) < -1)
				bad++;
	}
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	test_vector_files();
	test_empty();
	test_offsets_outside();
	test_lnotab();
	test_linetable310();
	test_locations_lines();
	test_locations_malformed();
	test_random();
	return unit_done("linetable");
}
