/* SPDX-License-Identifier: MIT */
/* Which copy of a code object's bytecode a 3.14t frame's instr_ptr is in. */
#include <stdint.h>

#include "unit.h"
#include "cpython/tlbc.h"

#define MAX ((uint64_t)1 << 28)

static void test_copies(void)
{
	/* Entry 0: the code object's own bytecode; 2 unused; 3 below entry 0. */
	const uint64_t e[] = { 0x7f0000001000, 0x7f0000009000, 0, 0x7e0000004000 };

	CHECK_EQ_INT(tlbc_offset(e, 4, 0x7f0000001000, MAX), 0);
	CHECK_EQ_INT(tlbc_offset(e, 4, 0x7f0000001042, MAX), 0x42);
	CHECK_EQ_INT(tlbc_offset(e, 4, 0x7f0000009010, MAX), 0x10);
	/* A copy far below the others still holds what is just past its start. */
	CHECK_EQ_INT(tlbc_offset(e, 4, 0x7e0000004006, MAX), 6);
	/* Below every copy, or too far past the nearest: no offset. */
	CHECK_EQ_INT(tlbc_offset(e, 4, 0x7d0000000000, MAX), -1);
	CHECK_EQ_INT(tlbc_offset(e, 4, 0x7f0000009000 + MAX + 2, MAX), -1);
	CHECK_EQ_INT(tlbc_offset(e, 0, 0x7f0000001000, MAX), -1);
	CHECK_EQ_INT(tlbc_offset(e, 1, 0x7f0000009010, MAX), 0x8010);
}

int main(void)
{
	test_copies();
	return unit_done("tlbc");
}
