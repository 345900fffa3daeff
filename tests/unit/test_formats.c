/* SPDX-License-Identifier: MIT */
/* Formats by extension, .gz included; a gzipped profile written in place over a longer file. */
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>
#include <stdio.h>
#include <stdint.h>

#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "output/formats.h"
#include "output/writers.h"
#include "unit.h"

static void test_by_path(void)
{
	CHECK_EQ_STR(format_name(format_by_path("p.txt")), "collapsed");
	CHECK_EQ_STR(format_name(format_by_path("p")), "collapsed");
	CHECK_EQ_STR(format_name(format_by_path("p.txt.gz")), "collapsed");
	CHECK_EQ_STR(format_name(format_by_path("p.gz")), "collapsed");
	CHECK_EQ_STR(format_name(format_by_path("p.json.gz")), "speedscope");
	CHECK_EQ_STR(format_name(format_by_path("p.gecko.json")), "gecko");
	CHECK_EQ_STR(format_name(format_by_path("p.GECKO.JSON.gz")), "gecko");
	CHECK_EQ_STR(format_name(format_by_path("p.speedscope.json")), "speedscope");
	CHECK_EQ_STR(format_name(format_by_path("p.html.gz")), "html");
	CHECK_EQ_STR(format_name(format_by_path("p.pb.gz")), "pprof");
	CHECK_EQ_STR(format_name(format_by_path("p.pprof.gz")), "pprof");
	CHECK_EQ_STR(format_name(format_by_path(".gz")), "collapsed");
}

/* An extension no format has: said, so that -o p.hmtl is not collapsed stacks under that name. */
static void test_unknown_ext(void)
{
	static const char *known[] = { "p", "p.txt", "p.gz", "p.html.gz", "p.pb.gz", "-", "dir.d/p",
				       "run.1", "p.2026-11-26", ".hidden", "p.", "./p", "a.b/c.gz" };
	char ext[32];

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		CHECK(format_unknown_ext(known[i], ext, sizeof(ext)) == NULL);
	CHECK(format_unknown_ext(NULL, ext, sizeof(ext)) == NULL);
	CHECK_EQ_STR(format_unknown_ext("p.foo", ext, sizeof(ext)), ".foo");
	CHECK_EQ_STR(format_unknown_ext("/tmp/x.y/p.hmtl.gz", ext, sizeof(ext)), ".hmtl");
	CHECK_EQ_STR(format_unknown_ext("prof.out", ext, sizeof(ext)), ".out");
}

/* In place (a hard link): the file ends where the compressed bytes end, not the text. */
static void test_gzip_in_place(void)
{
	char dir[] = "/tmp/pbp-unit-XXXXXX", path[64], other[64], text[256] = "";
	struct stack_tags t = { .pid = 1, .tid = 1, .status = ST_RUNNING };
	struct profile_meta m = { .mode = "cpu", .hz = 99 };
	struct agg *a = agg_new();
	uint32_t loc;
	FILE *f;
	gzFile gz;
	int n;

	if (!mkdtemp(dir) || !a) {
		CHECK(0);
		return;
	}
	snprintf(path, sizeof(path), "%s/p.txt.gz", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	f = fopen(path, "w");
	for (int i = 0; i < 1000; i++)
		fputs("old content, far longer than the profile\n", f);
	fclose(f);
	CHECK_EQ_INT(link(path, other), 0);
	loc = (uint32_t)agg_loc(a, "main", "app.py", 3, LOC_PY);
	agg_add(a, &t, &loc, 1, 5);
	CHECK_EQ_INT(profile_write(format_by_path(path), a, &m, path), 0);
	gz = gzopen(other, "rb");
	n = gz ? gzread(gz, text, sizeof(text) - 1) : -1;
	if (gz)
		gzclose(gz);
	CHECK(n > 0);
	CHECK_EQ_STR(text, "main (app.py:3) 5\n");
	unlink(other);
	unlink(path);
	rmdir(dir);
	agg_free(a);
}

int main(void)
{
	test_by_path();
	test_unknown_ext();
	test_gzip_in_place();
	return unit_done("formats");
}
