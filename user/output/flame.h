/* SPDX-License-Identifier: MIT */
/*
 * What the two flame graph writers (html.c, svg.c) share: one order of
 * locations and stacks (text escaping is text.c's).
 *
 * Locations are ranked by their text, and stacks sorted by their frames'
 * ranks (a shorter stack before the longer ones it is a prefix of). In that
 * order every subtree of the merged call tree is a run of consecutive
 * stacks, so a tree is built in one pass with no lookups: a stack shares
 * its first LCP(previous, this) nodes with the stack before it and every
 * frame after those is a new node. Children come out sorted by name.
 */
#ifndef PBP_OUTPUT_FLAME_H
#define PBP_OUTPUT_FLAME_H

#include <stdint.h>

struct agg;

struct flame_order {
	uint32_t nlocs, nstacks;
	char **text;            /* loc id -> loc_format() text */
	uint32_t *rank;         /* loc id -> rank of its text */
	uint32_t *byrank;       /* rank -> loc id */
	uint32_t *stacks;       /* stack indices in tree order */
};

/* 0, or -1 when out of memory (fo is then empty; freeing it is safe). */
int flame_order_build(const struct agg *a, struct flame_order *fo);
void flame_order_free(struct flame_order *fo);
/* Frames two stacks (agg indices) have in common from the root. */
uint32_t flame_lcp(const struct agg *a, uint32_t s1, uint32_t s2);
/* enum pbp_status a LOC_STATUS label stands for (ST_UNKNOWN if none). */
uint32_t flame_status_of(const char *label);

#endif /* PBP_OUTPUT_FLAME_H */
