/* SPDX-License-Identifier: MIT */
/*
 * Where the kernel's code-object cache finds its count (include/pybpfprof.h,
 * struct pbp_offsets): 3.14's count of code objects freed from its
 * _Py_DebugOffsets, 3.13's count of those made from the probed headers, and
 * only for a target whose interpreter block reads as theirs (3.13.18's is
 * 16 bytes larger than 3.13.0's: a field could have moved in it). A count
 * read from the wrong place would name a freed and reused address wrongly,
 * so any difference must leave the cache off.
 */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "unit.h"
#include "pybpfprof.h"
#include "cpython/debugoffsets.h"
#include "cpython/pyver.h"
#include "cpython/gen/offsets.h"

#define D13_INTERP 48           /* byte offset of 3.13's interpreter block: its size word */

static uint64_t get64(const uint8_t *blob, size_t off)
{
	uint64_t val;

	memcpy(&val, blob + off, sizeof(val));
	return val;
}

static void put64(uint8_t *blob, size_t off, uint64_t val)
{
	memcpy(blob + off, &val, sizeof(val));
}

static void test_313(const uint8_t *b, size_t len)
{
	uint8_t *copy = malloc(len);
	struct pyver v;

	CHECK_EQ_INT(pyver_from_debug_offsets(b, len, &v), 0);
	CHECK_EQ_INT(get64(b, D13_INTERP), code_new_table[0].words[0]);
	CHECK_EQ_INT(v.k.is_code_new, code_new_table[0].is_code_new);
	CHECK(v.k.is_code_new != PBP_NOOFF && v.k.is_code_new > 0);
	CHECK(v.k.ts_interp != PBP_NOOFF);
	CHECK_EQ_INT(v.k.is_code_gen, PBP_NOOFF);
	/* Each word moved in turn (the size by 16, as 3.13.18's): no count, or no layout at all. */
	for (unsigned w = 0; copy && w < CODE_NEW_WORDS; w++) {
		memcpy(copy, b, len);
		put64(copy, D13_INTERP + 8 * w, get64(b, D13_INTERP + 8 * w) + (w ? 8 : 16));
		if (pyver_from_debug_offsets(copy, len, &v) == 0)
			CHECK_EQ_INT(v.k.is_code_new, PBP_NOOFF);
		else
			CHECK(w > 0);   /* the size alone must still parse: the common case */
	}
	free(copy);
}

static void test_314(const uint8_t *b, size_t len)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_from_debug_offsets(b, len, &v), 0);
	CHECK(v.k.is_code_gen != PBP_NOOFF);
	CHECK_EQ_INT(v.k.is_code_new, PBP_NOOFF);
}

/* 3.6-3.12 (the run-time table): no count the kernel can find, no cache. */
static void test_table(void)
{
	for (unsigned minor = 6; minor <= 12; minor++) {
		struct pyver v;

		CHECK_EQ_INT(pyver_from_table(3, minor, 0, &v), 0);
		CHECK_EQ_INT(v.k.is_code_gen, PBP_NOOFF);
		CHECK_EQ_INT(v.k.is_code_new, PBP_NOOFF);
	}
}

int main(void)
{
	size_t len13 = 0, len14 = 0;
	uint8_t *b13 = unit_load_file("data/debug_offsets_3.13.bin", &len13);
	uint8_t *b14 = unit_load_file("data/debug_offsets_3.14.bin", &len14);

	CHECK(b13 != NULL && b14 != NULL);
	if (b13)
		test_313(b13, len13);
	if (b14)
		test_314(b14, len14);
	test_table();
	free(b13);
	free(b14);
	return unit_done("codecount");
}
