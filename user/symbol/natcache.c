/* SPDX-License-Identifier: MIT */
/* A native frame's naming by its address (natcache.h). */
#include <string.h>

#include "symbol/natcache.h"

static struct natcache_entry *slot_of(struct natcache *c, uint64_t pc)
{
	/* Return addresses are spread over bytes: a multiplicative hash mixes their low bits. */
	return &c->e[(pc * 0x9E3779B97F4A7C15ull) >> 32 & (NATCACHE_SLOTS - 1)];
}

void natcache_check(struct natcache *c, uint64_t maps_read_ns, uint64_t loc_epoch)
{
	if (c->maps_read_ns == maps_read_ns && c->loc_epoch == loc_epoch)
		return;
	memset(c->e, 0, sizeof(c->e));
	c->maps_read_ns = maps_read_ns;
	c->loc_epoch = loc_epoch;
}

const struct natcache_entry *natcache_get(struct natcache *c, uint64_t pc)
{
	const struct natcache_entry *e = slot_of(c, pc);

	if (pc && e->pc == pc) {
		c->hits++;
		return e;
	}
	c->misses++;
	return NULL;
}

void natcache_put(struct natcache *c, const struct natcache_entry *e)
{
	if (e->pc)
		*slot_of(c, e->pc) = *e;
}
