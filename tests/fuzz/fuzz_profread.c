/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for profile_read() (read/profread.c and
 * core/unzip.c), what `pybpfprof convert` and `diff` read a profile file
 * with: arbitrary bytes as the file, then gzipped, then that gzip stream
 * cut short and given a byte after its end.
 *
 *   make fuzz            (all harnesses; see the Makefile)
 *   build/fuzz/fuzz_profread -max_total_time=60 /tmp/fp tests/fuzz/corpus/profread
 *
 * Besides ASan/UBSan (and leaks), it aborts when a read fails without its
 * reason, when the bytes gzipped read otherwise than the bytes themselves,
 * when a cut of the gzip stream, or the stream with a byte after it, reads
 * as a profile (it must be "damaged gzip data (truncated)" or "(bytes after
 * its end)", unless the data before the cut already failed on the line the
 * whole did). Cuts: every byte of a stream up to CUTS bytes, else CUTS of
 * them evenly apart.
 *
 * Seeds (tests/fuzz/corpus/profread/): collapsed stacks with labels and
 * statuses, a bad line, pprof (gunzipped), a gzipped collapsed file (which
 * then reads gzipped twice), the start of pybpfprof's speedscope, Gecko,
 * HTML and SVG outputs, pstats, binary bytes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aggregate/aggregate.h"
#include "read/profread.h"
#include "core/errors.h"
#include "../unit/gzipmem.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)
#define CUTS 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfd = -1;

struct result {
	int err;
	size_t lineno;
	char why[128];
};

static struct result read_bytes(const uint8_t *buf, size_t len)
{
	struct agg *a = agg_new();
	struct profread_fail f;
	struct result r = { 0 };

	MUST(a != NULL);
	MUST(ftruncate(memfd, 0) == 0);
	MUST(len == 0 || pwrite(memfd, buf, len, 0) == (ssize_t)len);
	MUST(lseek(memfd, 0, SEEK_SET) == 0);
	r.err = profile_read(a, memfd, &f);
	MUST(r.err == 0 || r.err == -PBP_E_INVAL || r.err == -PBP_E_CORRUPT || r.err == -PBP_E_NOMEM);
	MUST(r.err == 0 || r.err == -PBP_E_NOMEM || (f.why && f.why[0]));
	MUST(r.err != -PBP_E_CORRUPT || !strncmp(f.why, "damaged gzip data", 17));
	r.lineno = r.err == -PBP_E_INVAL ? f.lineno : 0;
	snprintf(r.why, sizeof(r.why), "%s", r.err ? f.why ? f.why : "" : "");
	agg_free(a);
	return r;
}

static bool same(const struct result *x, const struct result *y)
{
	return x->err == y->err && x->lineno == y->lineno && !strcmp(x->why, y->why);
}

/* A read of a damaged stream: refused for it, or for what it held before the damage. */
static void check_damaged(const struct result *r, const struct result *whole, const char *why)
{
	MUST(r->err != 0);
	MUST((r->err == -PBP_E_CORRUPT && !strcmp(r->why, why)) || (r->err == whole->err && whole->err == -PBP_E_INVAL && r->lineno == whole->lineno) || r->err == -PBP_E_NOMEM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result plain, zipped, r;
	size_t gzlen, step;
	uint8_t *gz;

	if (memfd < 0)
		MUST((memfd = memfd_create("profile", MFD_CLOEXEC)) >= 0);
	if (size > (1 << 20))
		return 0;
	plain = read_bytes(data, size);
	gz = gzip_bytes(data, size, &gzlen);
	MUST(gz != NULL);
	zipped = read_bytes(gz, gzlen);
	/* gzip is invisible, unless data was gzip already (then it reads gzipped twice) */
	MUST(same(&plain, &zipped) || (size >= 2 && data[0] == 0x1f && data[1] == 0x8b));
	step = gzlen > CUTS ? gzlen / CUTS : 1;
	for (size_t cut = 2; cut < gzlen; cut += step) {
		r = read_bytes(gz, cut);
		check_damaged(&r, &zipped, "damaged gzip data (truncated)");
	}
	gz = realloc(gz, gzlen + 1);
	MUST(gz != NULL);
	gz[gzlen] = size ? (data[0] == 0x1f ? 0 : data[0]) : '\n';
	r = read_bytes(gz, gzlen + 1);
	check_damaged(&r, &zipped, "damaged gzip data (bytes after its end)");
	free(gz);
	return 0;
}
