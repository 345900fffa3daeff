/* SPDX-License-Identifier: MIT */
/*
 * Native locations' mappings and addresses (aggnat.h). Mappings are few
 * (a process's libraries), and a location is looked up here only the first
 * time it is given an address, so they are a list searched from the end
 * (the latest process's libraries come last).
 */
#include <stdlib.h>
#include <string.h>

#include "aggregate/aggnat.h"
#include "core/errors.h"

struct locnat {
	uint32_t mapping;       /* index + 1; 0: none */
	uint64_t addr;
};

struct aggnat {
	struct agg_mapping *maps;
	uint32_t nmaps, capmaps;
	struct locnat *locs;    /* by location id */
	uint32_t caplocs;
};

struct aggnat *aggnat_new(void)
{
	return calloc(1, sizeof(struct aggnat));
}

void aggnat_free(struct aggnat *n)
{
	if (!n)
		return;
	for (uint32_t i = 0; i < n->nmaps; i++)
		free((char *)n->maps[i].path);
	free(n->maps);
	free(n->locs);
	free(n);
}

static bool same_mapping(const struct agg_mapping *a, const struct agg_mapping *b)
{
	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       strcmp(a->build_id, b->build_id) == 0 && strcmp(a->path, b->path) == 0;
}

/* Index + 1 of m, stored if new; 0 when out of memory. */
static uint32_t mapping_id(struct aggnat *n, const struct agg_mapping *m)
{
	struct agg_mapping *grown;
	uint32_t i;

	for (i = n->nmaps; i-- > 0;)
		if (same_mapping(&n->maps[i], m))
			return i + 1;
	if (n->nmaps == n->capmaps) {
		uint32_t cap = n->capmaps ? n->capmaps * 2 : 16;

		if (!(grown = realloc(n->maps, cap * sizeof(*grown))))
			return 0;
		n->maps = grown, n->capmaps = cap;
	}
	n->maps[n->nmaps] = *m;
	if (!(n->maps[n->nmaps].path = strdup(m->path)))
		return 0;
	return ++n->nmaps;
}

static int grow_locs(struct aggnat *n, uint32_t need)
{
	uint32_t cap = n->caplocs ? n->caplocs : 256;
	struct locnat *p;

	while (cap < need)
		cap *= 2;
	if (!(p = realloc(n->locs, cap * sizeof(*p))))
		return -PBP_E_NOMEM;
	memset(p + n->caplocs, 0, (cap - n->caplocs) * sizeof(*p));
	n->locs = p, n->caplocs = cap;
	return 0;
}

int aggnat_set(struct aggnat *n, uint32_t loc, const struct agg_mapping *m, uint64_t addr)
{
	uint32_t id;

	if (loc >= n->caplocs && grow_locs(n, loc + 1) != 0)
		return -PBP_E_NOMEM;
	if (n->locs[loc].mapping)
		return 0;
	if (!(id = mapping_id(n, m)))
		return -PBP_E_NOMEM;
	n->locs[loc] = (struct locnat){ id, addr };
	return 0;
}

bool aggnat_get(const struct aggnat *n, uint32_t loc, uint32_t *mapping, uint64_t *addr)
{
	if (!n || loc >= n->caplocs || !n->locs[loc].mapping)
		return false;
	*mapping = n->locs[loc].mapping - 1;
	*addr = n->locs[loc].addr;
	return true;
}

uint32_t aggnat_nmappings(const struct aggnat *n)
{
	return n ? n->nmaps : 0;
}

const struct agg_mapping *aggnat_mapping(const struct aggnat *n, uint32_t i)
{
	return &n->maps[i];
}
