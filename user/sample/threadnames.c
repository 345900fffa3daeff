/* SPDX-License-Identifier: MIT */
/* A target's threads' Python names, kept up to date: see threadnames.h. */
#include <stdbool.h>
#include <stdint.h>

#include "sample/threadnames.h"
#include "cpython/thread.h"
#include "cpython/threadname.h"
#include "sample/threadtable.h"

/*
 * A thread whose name was not there when the names were read (registered in
 * threading's table just after, or named later): read again 0.1, 0.5,
 * 2.1 and 8.5 s after, not after NAMES_EVERY_NS, so that a thread is not one
 * root under its comm for 30 s and another under its name after.
 */
#define UNNAMED_TRIES 4
#define UNNAMED_FIRST_NS (100 * 1000000ull)

/* Some thread of the list had no name: read them again soon (UNNAMED_TRIES). */
void tnames_again(struct target *t, const struct pythread *list, char (*names)[PBP_NAME_LEN],
		  size_t n, uint64_t h, uint64_t now)
{
	bool unnamed = false;

	/* The main thread is MainThread before threading names it. */
	for (size_t i = 0; i < n && !unnamed; i++)
		unnamed = list[i].tid && list[i].tid != t->pid && !names[i][0];
	if (h != t->unnamed_hash) {
		t->unnamed_hash = h;
		t->unnamed_tries = 0;
	}
	if (!unnamed || t->unnamed_tries >= UNNAMED_TRIES)
		return;
	t->names_due = true;
	target_come_back(t, now + (UNNAMED_FIRST_NS << (2 * t->unnamed_tries)));
	t->unnamed_tries++;
}

/*
 * The list is the one last named: whether its names still stand. A named
 * thread sampled since its name was read has it read again from its Thread
 * (a rename shows at the next list read, not after NAMES_EVERY_NS); one not
 * sampled since is in no profile and is not looked at. A sampled thread
 * that threading did not name (its comm, MainThread) is looked for in the
 * registries again every NAMES_EVERY_NS, as it may be there by now.
 */
bool tnames_hold(struct collector *c, struct target *t, uint64_t now)
{
	for (uint32_t i = 0; i < t->tc_cap; i++) {
		struct tcache *e = &t->tc[i];
		uint64_t samples = tc_samples(e);

		if (!e->tid)
			continue;
		if (samples == e->named_samples) {
			c->names_unsampled++;
			continue;
		}
		if (!e->pyobj) {
			if (now - t->names_ns >= NAMES_EVERY_NS)
				return false;
			continue;
		}
		if (!pythread_name_same(t->p, e->pyobj, e->name))
			return false;
		e->named_samples = samples;
		c->names_checked++;
	}
	return true;
}

