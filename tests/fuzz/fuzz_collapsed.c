/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for `pybpfprof convert`: arbitrary bytes as a
 * collapsed-stack file read by collapsed_read(), and the aggregate it makes
 * written in every output format (collapsed, speedscope, pprof, pstats,
 * html, svg) to /dev/null, so every writer sees odd names, files, lines,
 * labels, counts and depths.
 *
 *   make fuzz            (all harnesses; see the Makefile)
 *   build/fuzz/fuzz_collapsed -max_total_time=60 /tmp/co tests/fuzz/corpus/collapsed
 *
 * The input's length picks the mode (cpu, wall, gil) and rate the writers
 * are told, so each meets all three. Besides ASan/UBSan (and leaks), it
 * aborts when a writer reports an error writing to /dev/null, or when
 * reading fails without naming a line.
 *
 * Seeds (tests/fuzz/corpus/collapsed/): profiles as pybpfprof writes them
 * with -t and --status, with a process label, frames without lines, names
 * holding spaces, parentheses, colons and UTF-8, comments and blank lines,
 * a huge count, and a few malformed lines.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/aggregate.h"
#include "read/collapsedread.h"
#include "output/formats.h"
#include "output/topview.h"
#include "output/writers.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const modes[] = { "cpu", "wall", "gil" };
	static const unsigned rates[] = { 99, 1, 100000 };
	struct profile_meta m = {
		.mode = modes[size % 3],
		.hz = rates[size / 3 % 3],
		.start_unix_ns = 1700000000ull * 1000000000ull,
		.duration_ns = 2000000000ull,
	};
	struct agg *a;
	size_t lineno = 0;
	const char *why = NULL;
	char *copy;
	FILE *in;
	int r;

	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		MUST(devnull != NULL);
	}
	if (size == 0)
		return 0;   /* fmemopen refuses an empty buffer */
	/* a private copy: exactly size bytes, so a read past it is caught */
	copy = malloc(size);
	MUST(copy != NULL);
	memcpy(copy, data, size);
	in = fmemopen(copy, size, "r");
	MUST(in != NULL);
	a = agg_new();
	MUST(a != NULL);
	r = collapsed_read(a, in, &lineno, &why);
	fclose(in);
	MUST(r == 0 || (lineno > 0 && (r != -1 || why)));
	/* What was read before a bad line is an aggregate like any other. */
	for (int fmt = 0; strcmp(format_name(fmt), "?") != 0; fmt++) {
		MUST(format_write(fmt, a, &m, devnull) == 0);
		MUST(fflush(devnull) == 0);
	}
	top_print(a, &m, devnull, 5);
	agg_free(a);
	free(copy);
	return 0;
}
