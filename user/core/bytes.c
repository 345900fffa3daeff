/* SPDX-License-Identifier: MIT */
/*
 * bytes.c: fields of a copy of target memory, read at a byte offset.
 *
 * The copies are plain byte buffers with fields wherever the target's
 * layout puts them, so a field may be unaligned: memcpy, not a cast. The
 * caller bounds off; these do not check it.
 */
#include <string.h>
#include <stdint.h>

#include "core/bytes.h"

uint64_t load_u64(const uint8_t *b, uint32_t off)
{
	uint64_t x;

	memcpy(&x, b + off, sizeof(x));
	return x;
}

uint32_t load_u32(const uint8_t *b, uint32_t off)
{
	uint32_t x;

	memcpy(&x, b + off, sizeof(x));
	return x;
}
