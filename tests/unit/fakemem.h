/* SPDX-License-Identifier: MIT */
/*
 * A target's memory faked by a buffer, for the asyncio readers' unit test
 * and fuzzer (struct aio_mem's read): the bytes sit at FAKEMEM_BASE, and
 * anything outside them is unmapped (-PBP_E_FAULT), as a freed page is.
 */
#ifndef PBP_TESTS_FAKEMEM_H
#define PBP_TESTS_FAKEMEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/errors.h"

#define FAKEMEM_BASE 0x10000ull

struct fakemem {
	const uint8_t *b;
	size_t len;
};

static inline int fakemem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fakemem *m = ctx;

	if (addr < FAKEMEM_BASE || addr - FAKEMEM_BASE > m->len || len > m->len - (addr - FAKEMEM_BASE))
		return -PBP_E_FAULT;
	memcpy(buf, m->b + (addr - FAKEMEM_BASE), len);
	return 0;
}

#endif /* PBP_TESTS_FAKEMEM_H */
