/* SPDX-License-Identifier: MIT */
/* The native leaf of a sample's stack (natleaf.h), timed for --stats. */
#include "sample/natleaf.h"
#include "core/clock.h"
#include "symbol/native.h"
#include "symbol/natsym.h"

void target_native_leaf(struct collector *c, struct target *t, const struct pbp_sample *ks,
			uint32_t *locs, uint32_t *n, uint32_t max)
{
	uint64_t t0;
	int64_t id;

	/* Only a GIL known to be free says the thread is outside the interpreter. */
	if (!c->o.native_leaf || !(ks->flags & PBP_F_REGS) || *n == 0 || *n >= max ||
	    (ks->flags & (PBP_F_GIL_KNOWN | PBP_F_HOLDS_GIL)) != PBP_F_GIL_KNOWN)
		return;
	if (!c->natsym && !(c->natsym = natsym_new()))
		return;
	t0 = mono_ns();
	t->nat.pid = t->pid;
	id = native_loc(c->natsym, &t->nat, ks->ip, c->agg);
	if (id >= 0) {
		locs[(*n)++] = (uint32_t)id;
		c->native_leaves++;
	}
	c->native_ns += mono_ns() - t0;
}
