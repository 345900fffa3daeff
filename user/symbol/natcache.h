/* SPDX-License-Identifier: MIT */
/*
 * --native: what a native frame's address was named, kept per process so
 * that a return address seen again (most are, sample after sample) costs
 * a lookup, not a symbol search, a classification and a location's
 * interning. Each entry holds an address's location id, whether it is an
 * activation of the loop or call machinery, and whether it had a name.
 * Exact: the whole cache is forgotten when the process's mappings are
 * read again (a library loaded or unloaded may have moved what an address
 * is) and when the profile's location ids change (agg_loc_epoch: a
 * window's aggregate reset). Direct-mapped, NATCACHE_SLOTS entries: a
 * collision replaces, it never misnames.
 */
#ifndef PBP_SYMBOL_NATCACHE_H
#define PBP_SYMBOL_NATCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbol/natfold.h"

#define NATCACHE_SLOTS 2048

struct natcache_entry {
	uint64_t pc;            /* 0: empty */
	uint32_t loc;
	bool nameless;
	struct natfold_frame fold;
};

struct natcache {
	uint64_t maps_read_ns;  /* the mappings it was filled under (natmaps.read_ns) */
	uint64_t loc_epoch;     /* the location ids it holds (agg_loc_epoch) */
	uint64_t hits, misses;
	struct natcache_entry e[NATCACHE_SLOTS];
};

/* Forgets every entry unless they were made under these mappings and location ids. */
void natcache_check(struct natcache *c, uint64_t maps_read_ns, uint64_t loc_epoch);
/* pc's entry if it is there, else NULL (a miss, counted). */
const struct natcache_entry *natcache_get(struct natcache *c, uint64_t pc);
void natcache_put(struct natcache *c, const struct natcache_entry *e);

#endif /* PBP_SYMBOL_NATCACHE_H */
