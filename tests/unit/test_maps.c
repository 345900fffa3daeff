/* SPDX-License-Identifier: MIT */
/* maps_parse_line: real kernel lines, odd paths, and every kind of malformed line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <stddef.h>

#include "core/errors.h"
#include "proc/maps.h"
#include "unit.h"

static int parse(const char *line, struct map_entry *e)
{
	memset(e, 0x5a, sizeof(*e));
	return maps_parse_line(line, e);
}

static void test_good(void)
{
	struct map_entry e;

	CHECK_EQ_INT(parse("7f3a1e2b4000-7f3a1e2d9000 r-xp 00028000 fd:01 1319423"
			   "                    /usr/lib/x86_64-linux-gnu/libc.so.6\n", &e), 0);
	CHECK(e.start == 0x7f3a1e2b4000ull);
	CHECK(e.end == 0x7f3a1e2d9000ull);
	CHECK(e.offset == 0x28000);
	CHECK_EQ_STR(e.perms, "r-xp");
	CHECK(e.inode == 1319423);
	CHECK(e.dev == makedev(0xfd, 0x01));     /* as stat's st_dev for that file */
	CHECK_EQ_STR(e.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK(!e.deleted);
	/* a major above 255 and a wide minor, as new_encode_dev spreads them */
	CHECK_EQ_INT(parse("1000-2000 r--p 0 103:1a2b3 7 /x\n", &e), 0);
	CHECK(major(e.dev) == 0x103 && minor(e.dev) == 0x1a2b3);

	/* anonymous, new kernels: nothing after the inode */
	CHECK_EQ_INT(parse("7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0\n", &e), 0);
	CHECK_EQ_STR(e.path, "");
	CHECK(e.inode == 0);
	CHECK(!e.deleted);
	/* old kernels: one trailing space; and no newline at all */
	CHECK_EQ_INT(parse("7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0 \n", &e), 0);
	CHECK_EQ_STR(e.path, "");
	CHECK_EQ_INT(parse("7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0", &e), 0);
	CHECK_EQ_STR(e.path, "");

	CHECK_EQ_INT(parse("55d0c81e6000-55d0c8207000 rw-p 00000000 00:00 0"
			   "                          [heap]\n", &e), 0);
	CHECK_EQ_STR(e.path, "[heap]");
	CHECK_EQ_INT(parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
			   "                  [vsyscall]", &e), 0);
	CHECK(e.start == 0xffffffffff600000ull && e.end == 0xffffffffff601000ull);
	CHECK_EQ_STR(e.perms, "--xp");
	CHECK_EQ_STR(e.path, "[vsyscall]");

	/* spaces inside the path, shared mapping, big inode, upper-case hex */
	CHECK_EQ_INT(parse("00400000-00401000 rw-s 0000ABCD 103:02 18446744073709551615"
			   " /srv/my data/lib python.so\n", &e), 0);
	CHECK(e.start == 0x400000 && e.end == 0x401000);
	CHECK(e.offset == 0xabcd);
	CHECK_EQ_STR(e.perms, "rw-s");
	CHECK(e.inode == 18446744073709551615ull);
	CHECK_EQ_STR(e.path, "/srv/my data/lib python.so");

	/* deleted: kept as written, flagged */
	CHECK_EQ_INT(parse("7f0000000000-7f0000001000 r--p 00000000 fd:01 42"
			   "      /usr/lib/libpython3.11.so.1.0 (deleted)\n", &e), 0);
	CHECK_EQ_STR(e.path, "/usr/lib/libpython3.11.so.1.0 (deleted)");
	CHECK(e.deleted);
	CHECK_EQ_INT(parse("7f0000000000-7f0000001000 rw-s 00000000 00:01 7"
			   "  /memfd:x (deleted)", &e), 0);
	CHECK(e.deleted);
	/* the suffix alone, or not at the end, is not "deleted" */
	CHECK_EQ_INT(parse("1000-2000 r--p 00000000 00:00 0  (deleted)", &e), 0);
	CHECK_EQ_STR(e.path, "(deleted)");
	CHECK(!e.deleted);
	CHECK_EQ_INT(parse("1000-2000 r--p 00000000 00:00 0 /a (deleted)/b", &e), 0);
	CHECK(!e.deleted);

	/* start == end is accepted; the largest values fit */
	CHECK_EQ_INT(parse("1000-1000 r--p 0 0:0 0", &e), 0);
	CHECK_EQ_INT(parse("0000000000000000ffffffffffffffff-ffffffffffffffff ---p ffffffffffffffff"
			   " ffffffff:ffffffff 0", &e), 0);
	CHECK(e.start == ~0ull && e.end == ~0ull && e.offset == ~0ull);
}

static void test_path_limits(void)
{
	struct map_entry e;
	char line[1200];
	const char *head = "1000-2000 r--p 00000000 00:00 0 ";
	size_t h = strlen(head);

	/* 511 bytes of path fit (plus the NUL), 512 do not */
	memcpy(line, head, h);
	line[h] = '/';
	memset(line + h + 1, 'a', 510);
	strcpy(line + h + 511, "\n");
	CHECK_EQ_INT(parse(line, &e), 0);
	CHECK_EQ_INT(strlen(e.path), 511);
	line[h + 511] = 'a';
	strcpy(line + h + 512, "\n");
	CHECK_EQ_INT(parse(line, &e), -PBP_E_CORRUPT);
	/* a long path split by fgets: the tail is not a line */
	CHECK_EQ_INT(parse("aaaaaaaa/bbb\n", &e), -PBP_E_CORRUPT);
}

static void test_bad(void)
{
	static const char *const bad[] = {
		"",
		"\n",
		" ",
		"1000-2000",
		"1000-2000 ",
		"1000-2000 r--p",
		"1000-2000 r--p ",
		"1000-2000 r--p 0",
		"1000-2000 r--p 0 ",
		"1000-2000 r--p 0 00",
		"1000-2000 r--p 0 00:",
		"1000-2000 r--p 0 00:00",
		"1000-2000 r--p 0 00:00 ",
		"1000 2000 r--p 0 00:00 0",
		"-2000 r--p 0 00:00 0",
		"1000- r--p 0 00:00 0",
		"1000--2000 r--p 0 00:00 0",
		"+1000-2000 r--p 0 00:00 0",
		" 1000-2000 r--p 0 00:00 0",
		"1000-2000  r--p 0 00:00 0",       /* two spaces */
		"1000-2000\tr--p 0 00:00 0",
		"2000-1000 r--p 0 00:00 0",        /* start > end */
		"1g00-2000 r--p 0 00:00 0",
		"0x1000-2000 r--p 0 00:00 0",
		"10000000000000000-10000000000000001 r--p 0 00:00 0",  /* 65 bits */
		"1000-2000 r--p 10000000000000000 00:00 0",
		"1000-2000 r--p 0 100000000:00 0",
		"1000-2000 r--p 0 00:100000000 0",
		"1000-2000 r--p 0 00:00 18446744073709551616",      /* 2^64 */
		"1000-2000 r--p 0 00:00 99999999999999999999999",
		"1000-2000 r--p 0 00:00 -1",
		"1000-2000 r--p 0 00:00 0x1",
		"1000-2000 r--p 0 00:00 12a /x",
		"1000-2000 r--p 0 00-00 0",
		"1000-2000 r--p 0 0000 0",
		"1000-2000 rwxps 0 00:00 0",
		"1000-2000 r-p 0 00:00 0",
		"1000-2000 R--p 0 00:00 0",
		"1000-2000 w--p 0 00:00 0",
		"1000-2000 -r-p 0 00:00 0",
		"1000-2000 r--x 0 00:00 0",
		"1000-2000 r--\0p 0 00:00 0",
		"1000-2000 r--p -0 00:00 0",
		"1000-2000 r--p 0 00:00 0 /a\n/b",  /* two lines */
		"1000-2000 r--p 0 00:00 0\n\n",
		"garbage",
	};
	struct map_entry e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i], &e);

		if (r != -PBP_E_CORRUPT)
			fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
		CHECK_EQ_INT(r, -PBP_E_CORRUPT);
	}
	CHECK_EQ_INT(maps_parse_line(NULL, &e), -PBP_E_INVAL);
	CHECK_EQ_INT(maps_parse_line("1000-2000 r--p 0 00:00 0", NULL), -PBP_E_INVAL);
}

/* Every line of our own maps parses, and the fields agree with what we know. */
static void test_self(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int n = 0, stack = 0, self = 0;
	unsigned long here = (unsigned long)&test_self;
	struct map_entry e;

	if (!f) {
		printf("SKIP test_self: /proc/self/maps not readable\n");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		int r = maps_parse_line(line, &e);

		if (r != 0)
			fprintf(stderr, "rejected: %s", line);
		CHECK_EQ_INT(r, 0);
		if (r)
			continue;
		n++;
		CHECK(e.start < e.end);
		stack += strcmp(e.path, "[stack]") == 0;
		if (here >= e.start && here < e.end) {
			self++;
			CHECK(e.perms[2] == 'x');
			CHECK(e.path[0] == '/');
		}
	}
	fclose(f);
	CHECK(n > 5);
	CHECK_EQ_INT(stack, 1);
	CHECK_EQ_INT(self, 1);
}

int main(void)
{
	test_good();
	test_path_limits();
	test_bad();
	test_self();
	return unit_done("maps");
}
