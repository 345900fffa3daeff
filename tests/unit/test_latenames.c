/* SPDX-License-Identifier: MIT */
/*
 * Threads a whole host's cpu mode adopts (target.c, names_late): counted at
 * their first sample with the state the kernel found, named by a list read
 * asked for a little later, and that read spared when they have all ended.
 * The world is test_target.c's (targetworld.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "core/clock.h"
#include "sample/threadtable.h"
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

/*
 * names_late: the list read adopted threads ask for is spared when they all
 * ended and no listed thread did (the read would find nothing else); one of
 * them still there, or a listed thread gone, has it made.
 */
static void test_late_read_spared(void)
{
	struct world w;
	struct tcache *e;

	setup(&w, MODE_CPU);
	w.c.o.names_late = true;
	CHECK(!target_spare_late_read(&w.c, &w.t));     /* nothing adopted: nothing to spare */
	adopt(&w, 0);
	adopt(&w, 1);
	CHECK(w.t.later_adopted && w.t.rescan_later > 0);
	w.t.rescan_later = 0;                           /* due: the timer clears it, then asks */
	CHECK(target_spare_late_read(&w.c, &w.t));      /* TIDs of no task: ended */
	CHECK_EQ_INT(w.c.lists_spared, 1);
	CHECK(tc_find(&w.t, TID(0)) == NULL && tc_find(&w.t, TID(1)) == NULL);
	CHECK_EQ_INT(w.s.del, 2);
	CHECK(!target_spare_late_read(&w.c, &w.t));     /* asked once: the next adoption asks again */
	CHECK_EQ_INT(agg_total(w.c.agg), 2);            /* what they were counted as stays */

	/* One adopted thread is this process's own: there still, the read is made. */
	adopt(&w, 0);
	adopt(&w, 1);
	CHECK(w.t.later_adopted);
	w.t.rescan_later = 0;
	e = tc_find(&w.t, TID(0));
	e->tid = getpid();      /* the table is probed by tid: set back before the next lookup */
	CHECK(!target_spare_late_read(&w.c, &w.t));
	e->tid = TID(0);

	/* Every adopted thread ended, but so did one a list gave (not adopted): the read has news. */
	e->adopted = false;
	CHECK(!target_spare_late_read(&w.c, &w.t));
	CHECK_EQ_INT(w.c.lists_spared, 1);
	CHECK(tc_find(&w.t, TID(0)) != NULL && tc_find(&w.t, TID(1)) != NULL);
	teardown(&w);
}

int main(void)
{
	test_names_late();
	test_late_read_spared();
	return unit_done("latenames");
}
