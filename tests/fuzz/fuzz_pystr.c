/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for pystr_decode(): arbitrary bytes as a str object
 * copied out of a target (code object names and file names come this way).
 *
 *   make fuzz            (all harnesses; see the Makefile)
 *   build/fuzz/fuzz_pystr -max_total_time=60 /tmp/ps tests/fuzz/corpus/pystr
 *
 * Input layout:
 *   byte 0      the layout: CPython 3.(8 + byte0 % 5), from pyver_from_table()
 *   byte 1      the output buffer's size, from a few edge values
 *   bytes 2..   the object, exactly that many bytes (reads past it are caught)
 *
 * Besides ASan/UBSan, it aborts when a result is not 0 or a -PBP_E_* code,
 * the output is not NUL-terminated inside the buffer, holds something other
 * than whole UTF-8 sequences (a str may hold lone surrogates: they must come
 * out as '?'), or when a smaller buffer gives other than a prefix of a
 * larger one's result cut at a character boundary.
 *
 * Seeds (tests/fuzz/corpus/pystr/): compact ASCII, Latin-1, UCS-2 (with a
 * surrogate) and UCS-4 strings of 3.8 (with wstr) and 3.12 (without), an
 * empty one, a legacy (not compact) one and one whose length overruns.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "cpython/pystr.h"
#include "cpython/pyver.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

#define BIG 20000       /* more than PYSTR_MAX_CHARS characters of 4 bytes could need */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const size_t outlens[] = { 1, 2, 3, 4, 5, 8, 16, 64, 255, 4096, BIG };

/* Lead byte and continuation bytes of a sequence of 1-4 bytes, code point <= 0x10ffff, no surrogate. */
static size_t seq_len(const unsigned char *s)
{
	size_t n;

	if (s[0] < 0x80)
		return 1;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	MUST(n != 0 && s[0] <= 0xf4);
	MUST(s[0] != 0xed || s[1] < 0xa0);     /* no surrogates: they are not UTF-8 */
	for (size_t i = 1; i < n; i++)
		MUST((s[i] & 0xc0) == 0x80);
	return n;
}

static void check_utf8(const char *out)
{
	for (const unsigned char *s = (const unsigned char *)out; *s; s += seq_len(s))
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *big, *small;
	struct pyver v;
	size_t outlen, objlen;
	uint8_t *obj;
	int rb, rs;

	if (size < 2)
		return 0;
	if (!big) {
		big = malloc(BIG);
		small = malloc(BIG);
		MUST(big && small);
	}
	MUST(pyver_from_table(3, 8 + data[0] % 5, 0, &v) == 0);
	outlen = outlens[data[1] % (sizeof(outlens) / sizeof(outlens[0]))];
	objlen = size - 2;
	obj = malloc(objlen ? objlen : 1);
	MUST(obj != NULL);
	memcpy(obj, data + 2, objlen);

	memset(big, 0x7f, BIG);
	rb = pystr_decode(&v, obj, objlen, big, BIG);
	MUST(rb == 0 || rb == -PBP_E_CORRUPT);
	if (rb == 0) {
		MUST(memchr(big, 0, BIG) != NULL);
		check_utf8(big);
	}

	memset(small, 0x7f, BIG);
	rs = pystr_decode(&v, obj, objlen, small, outlen);
	MUST(rs == rb);
	/* nothing written past the buffer it was given */
	for (size_t i = outlen; i < BIG; i++)
		MUST(small[i] == 0x7f);
	if (rs == 0) {
		size_t n = strlen(small);

		MUST(n < outlen);
		check_utf8(small);
		/* a prefix of the whole, cut where the next character did not fit */
		MUST(strncmp(small, big, n) == 0);
		if (big[n]) {
			size_t next = seq_len((const unsigned char *)big + n);

			MUST(n + next > outlen - 1);
		}
	}
	free(obj);
	return 0;
}
