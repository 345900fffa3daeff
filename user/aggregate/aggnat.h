/* SPDX-License-Identifier: MIT */
/*
 * Where native locations' code is, for pprof: the files mapped (pprof's
 * Mapping: path, build-id, address range and file offset) and, per
 * location, one address in its mapping (Location.address). A location is
 * named by its function, not its address, so the address kept is the first
 * one sampled there. Beside the aggregate's locations, by location id.
 */
#ifndef PBP_AGGREGATE_AGGNAT_H
#define PBP_AGGREGATE_AGGNAT_H

#include <stdbool.h>
#include <stdint.h>

#define AGG_BUILD_ID_HEX 129    /* 64 bytes of build-id in hex, and the NUL */

struct agg_mapping {
	const char *path;               /* as the process maps it; own copy once stored */
	char build_id[AGG_BUILD_ID_HEX]; /* lower-case hex; "" when the file has none (or was not read) */
	uint64_t start, limit, offset;  /* the mapping's addresses [start, limit) and its file offset */
};

struct aggnat;
struct aggnat *aggnat_new(void);
void aggnat_free(struct aggnat *n);
/*
 * Location loc's code is at addr of mapping m (copied; equal mappings are
 * stored once). The first address given for a location is kept. 0, or
 * -PBP_E_NOMEM.
 */
int aggnat_set(struct aggnat *n, uint32_t loc, const struct agg_mapping *m, uint64_t addr);
/* Mapping index and address of loc; false when it has none (a Python frame). */
bool aggnat_get(const struct aggnat *n, uint32_t loc, uint32_t *mapping, uint64_t *addr);
uint32_t aggnat_nmappings(const struct aggnat *n);
const struct agg_mapping *aggnat_mapping(const struct aggnat *n, uint32_t i);

#endif /* PBP_AGGREGATE_AGGNAT_H */
