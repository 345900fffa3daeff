/* SPDX-License-Identifier: MIT */
/*
 * --native's naming by address (user/symbol/natcache.c): an address named
 * under the same mappings and location ids is found again; a new reading
 * of the mappings or a reset of the locations forgets every entry; two
 * addresses in one slot replace each other, never answer for each other.
 */
#include <stdint.h>
#include <stdlib.h>

#include "unit.h"
#include "symbol/natcache.h"

static void put(struct natcache *c, uint64_t pc, uint32_t loc)
{
	struct natcache_entry e = { .pc = pc, .loc = loc, .nameless = loc & 1, .fold = { .eval = loc == 7 } };

	natcache_put(c, &e);
}

int main(void)
{
	struct natcache *c = calloc(1, sizeof(*c));
	const struct natcache_entry *e;
	uint64_t other = 0;

	natcache_check(c, 100, 1);
	CHECK(natcache_get(c, 0x401000) == NULL);
	put(c, 0x401000, 7);
	e = natcache_get(c, 0x401000);
	CHECK(e && e->loc == 7 && e->nameless && e->fold.eval);
	natcache_check(c, 100, 1);              /* same mappings, same ids: kept */
	CHECK(natcache_get(c, 0x401000) != NULL);
	natcache_check(c, 200, 1);              /* the mappings read again */
	CHECK(natcache_get(c, 0x401000) == NULL);
	put(c, 0x401000, 8);
	natcache_check(c, 200, 2);              /* the locations reset */
	CHECK(natcache_get(c, 0x401000) == NULL);
	/* Another address in 0x401000's slot: it replaces it. */
	put(c, 0x401000, 9);
	for (uint64_t pc = 0x401001; pc < 0x401000 + 1000000 && !other; pc++) {
		put(c, pc, 10);
		if (natcache_get(c, 0x401000) == NULL)
			other = pc;
	}
	CHECK(other != 0);
	e = natcache_get(c, other);
	CHECK(e && e->pc == other && e->loc == 10);
	CHECK(natcache_get(c, 0x401000) == NULL);
	CHECK(natcache_get(c, 0) == NULL);      /* 0 is an empty slot's, never an address */
	CHECK(c->hits > 0 && c->misses > 0);
	free(c);
	return unit_done("natcache");
}
