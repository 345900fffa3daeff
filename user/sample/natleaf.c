/* SPDX-License-Identifier: MIT */
/* The native leaf, or whole native stack, and the kernel frames of a sample's stack (natleaf.h). */
#include "sample/natleaf.h"
#include "core/clock.h"
#include "sample/sampler.h"
#include "symbol/native.h"
#include "symbol/natstack.h"
#include "symbol/natsym.h"

/* --native: the whole native stack woven with the Python frames, when its copy came. */
static bool native_whole(struct collector *c, struct target *t, const struct pbp_sample *ks,
			 uint32_t *locs, uint32_t *n, uint32_t max)
{
	const struct pbp_ustack *u = c->ops->ustack ? c->ops->ustack(c->smp, ks->tid, ks->ts) : NULL;

	if (!u || (!c->natsym && !(c->natsym = natsym_new())))
		return false;
	t->nat.pid = t->pid;
	return native_stack(c->natsym, &t->nat, ks, u, c->agg, locs, n, max, &c->natstack) == 0;
}

void target_native_leaf(struct collector *c, struct target *t, const struct pbp_sample *ks,
			uint32_t *locs, uint32_t *n, uint32_t max)
{
	uint64_t t0;
	int64_t id;

	if (c->o.native && (ks->flags & PBP_F_USTACK) && *n > 0 && native_whole(c, t, ks, locs, n, max))
		return;
	/*
	 * Only a GIL known to be free says the thread is outside the
	 * interpreter; on a free-threaded build, its detached thread state.
	 */
	if (!c->o.native_leaf || !(ks->flags & PBP_F_REGS) || *n == 0 || *n >= max ||
	    ((ks->flags & (PBP_F_GIL_KNOWN | PBP_F_HOLDS_GIL)) != PBP_F_GIL_KNOWN &&
	     !(ks->flags & PBP_F_DETACHED)))
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

static uint32_t read_kstack(void *ctx, int32_t id, uint64_t *ips)
{
	struct collector *c = ctx;

	return c->ops->kstack ? c->ops->kstack(c->smp, id, ips) : 0;
}

void target_kernel_frames(struct collector *c, const struct pbp_sample *ks, uint32_t *locs,
			  uint32_t *n, uint32_t max)
{
	/* c->kstacks: made with --kernel before sampling, while kallsyms may still be read. */
	if (!c->kstacks || !(ks->flags & PBP_F_KSTACK) || *n == 0)
		return;
	kernel_frames(c->kstacks, ks, read_kstack, c, c->agg, locs, n, max);
}
