/* SPDX-License-Identifier: MIT */
/*
 * Threads a whole host's cpu mode adopts (target.c, names_late): counted at
 * their first sample with the state the kernel found, named by a list read
 * asked for a little later.
 * The world is test_target.c's (targetworld.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "core/clock.h"
#include "targetworld.h"

/*
 * Whole-host cpu mode: a thread the kernel found is counted without a list
 * read, and one is asked for a little later (its name); otherwise at once.
 */
static void test_names_late(void)
{
	for (int late = 0; late < 2; late++) {
		struct world w;
		uint64_t before;

		setup(&w, MODE_CPU);
		w.c.o.names_late = late;
		w.t.rescan_ok = 0;
		before = w.c.rescans;
		sample(&w, 0, PBP_F_TSTATE_FOUND, 1, KERNEL_DEPTH, 0);
		sample(&w, 1, PBP_F_TSTATE_FOUND, 1, KERNEL_DEPTH, 0);
		CHECK_EQ_INT(agg_total(w.c.agg), 2);
		CHECK_EQ_INT(w.c.dropped, 0);
		if (late) {
			CHECK_EQ_INT(w.c.rescans - before, 0);
			CHECK(w.t.rescan_later > mono_ns() && w.t.rescan_later <= mono_ns() + 1000 * MS);
		} else {
			CHECK(w.c.rescans - before >= 1);
			CHECK_EQ_INT(w.t.rescan_later, 0);
		}
		teardown(&w);
	}
}

int main(void)
{
	test_names_late();
	return unit_done("latenames");
}
