/* SPDX-License-Identifier: MIT */
/* A target's thread table: see threadtable.h. */
#include <stdlib.h>
#include <string.h>

#include "sample/threadtable.h"
#include "core/errors.h"
#include "sample/sampler.h"

void tc_forget_counted(struct tcache *e)
{
	for (int s = 0; s < ST__COUNT; s++)
		e->agg_id[s] = -1;
	e->label = -1;
}

uint64_t tc_samples(const struct tcache *e)
{
	uint64_t n = 0;

	for (int s = 0; s < ST__COUNT; s++)
		n += e->status[s];
	return n;
}

struct tcache *tc_find(struct target *t, pid_t tid)
{
	uint32_t mask = t->tc_cap - 1, i;

	if (!t->tc_cap)
		return NULL;
	for (i = (uint32_t)tid * 2654435761u & mask; t->tc[i].tid; i = (i + 1) & mask)
		if (t->tc[i].tid == tid)
			return &t->tc[i];
	return NULL;
}

static int tc_grow(struct target *t)
{
	uint32_t ncap = t->tc_cap ? t->tc_cap * 2 : 64;
	struct tcache *old = t->tc, *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -PBP_E_NOMEM;
	t->tc = nt;
	for (uint32_t i = 0, oldcap = t->tc_cap; i < oldcap; i++) {
		uint32_t j;

		if (!old[i].tid)
			continue;
		for (j = (uint32_t)old[i].tid * 2654435761u & (ncap - 1); nt[j].tid; j = (j + 1) & (ncap - 1))
			;
		nt[j] = old[i];
	}
	t->tc_cap = ncap;
	free(old);
	return 0;
}

struct tcache *tc_add(struct target *t, pid_t tid)
{
	uint32_t i;

	if ((t->tc_n + 1) * 2 > t->tc_cap && tc_grow(t))
		return NULL;
	for (i = (uint32_t)tid * 2654435761u & (t->tc_cap - 1); t->tc[i].tid; i = (i + 1) & (t->tc_cap - 1))
		;
	memset(&t->tc[i], 0, sizeof(t->tc[i]));
	t->tc[i].tid = tid;
	t->tc[i].slot = -1;
	tc_forget_counted(&t->tc[i]);
	t->tc_n++;
	return &t->tc[i];
}

/* Drop threads the last rescan did not see; rebuilding keeps probing simple. */
void tc_sweep(struct collector *c, struct target *t)
{
	struct tcache *old = t->tc;
	uint32_t oldcap = t->tc_cap;

	t->tc = calloc(oldcap, sizeof(*t->tc));
	if (!t->tc) {
		t->tc = old;
		return;
	}
	t->tc_n = 0;
	for (uint32_t i = 0; i < oldcap; i++) {
		struct tcache *e = &old[i], *n;

		if (!e->tid)
			continue;
		if (e->gen != t->gen) {
			c->ops->del_thread(c->smp, e->tid);
			c->ops->slot_free(c->smp, e->slot);
			free(e->locs);
			continue;
		}
		n = tc_add(t, e->tid);
		*n = *e;
	}
	free(old);
}
