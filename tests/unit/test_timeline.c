/* SPDX-License-Identifier: MIT */
/* The sample times a recording keeps for the Gecko profile (aggregate/timeline.c). */
#include <stdio.h>
#include <stdint.h>

#include "aggregate/timeline.h"
#include "unit.h"

int main(void)
{
	struct timeline t;

	timeline_init(&t, 10000);
	for (int i = 0; i < 9000; i++)
		timeline_add(&t, i % 7, 1000 + (uint64_t)i);
	timeline_add(&t, -1, 5);        /* not counted (folded): left out */
	CHECK_EQ_INT(t.n, 9000);
	CHECK(!t.full);
	CHECK_EQ_INT(t.stack[8999], 8999 % 7);
	CHECK_EQ_INT(t.ns[4096], 1000 + 4096);  /* across a growth */
	for (int i = 0; i < 2000; i++)
		timeline_add(&t, 1, 1);
	CHECK_EQ_INT(t.n, 10000);       /* at most max, then full */
	CHECK(t.full);
	timeline_reset(&t);
	CHECK(!t.full && t.n == 0);
	timeline_add(&t, 3, 42);
	CHECK_EQ_INT(t.stack[0], 3);
	CHECK_EQ_INT(t.ns[0], 42);
	timeline_free(&t);
	CHECK(t.n == 0 && !t.stack && t.max == 10000);
	return unit_done("timeline");
}
