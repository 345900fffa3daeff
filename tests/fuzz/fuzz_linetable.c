// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for user/cpython/linetable.c, whose tables come straight from
 * the target's memory.
 *
 * Input layout:
 *   byte 0      bits 0-1: table kind (3 = unknown kind, must answer -1)
 *               bits 2-7: picks co_firstlineno from a few edge values
 *   bytes 1-4   signed 32-bit little-endian byte offset into the bytecode
 *   bytes 5..   the line table itself
 *
 * Besides ASan/UBSan catching bad reads and overflow, it aborts when:
 * a result is below -1, or the answer changes between two identical calls.
 *
 * Build and run (from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
 *       tests/fuzz/fuzz_linetable.c user/cpython/linetable.c -o /tmp/fz
 *   /tmp/fz -max_total_time=60 tests/fuzz/corpus/linetable
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include "cpython/linetable.h"
#include "cpython/pyver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* First lines worth trying: ordinary, zero, negative, near both int ends. */
static const int firstlines[] = { 1, 0, -1, 100000, INT_MAX, INT_MAX - 200, INT_MIN, INT_MIN + 1 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;

	int kind = data[0] & 3;
	int first = firstlines[(data[0] >> 2) % (sizeof(firstlines) / sizeof(firstlines[0]))];
	uint32_t raw = (uint32_t)data[1] | (uint32_t)data[2] << 8 |
		       (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
	int64_t off = (int32_t)raw;
	const uint8_t *tab = data + 5;  /* ends where libFuzzer's buffer ends */
	size_t len = size - 5;

	int line = lt_addr2line(kind, tab, len, first, off);
	if (line < -1 || line != lt_addr2line(kind, tab, len, first, off))
		abort();
	if (kind > LT_LOCATIONS) {
		if (off >= 0 && line != -1)
			abort();
		return 0;
	}
	return 0;
}
