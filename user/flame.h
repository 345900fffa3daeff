/* SPDX-License-Identifier: MIT */
/*
 * What the two flame graph writers (html.c, svg.c) share: one order of
 * locations and stacks, and text escaping.
 *
 * Locations are ranked by their text, and stacks sorted by their frames'
 * ranks (a shorter stack before the longer ones it is a prefix of). In that
 * order every subtree of the merged call tree is a run of consecutive
 * stacks, so a tree is built in one pass with no lookups: a stack shares
 * its first LCP(previous, this) nodes with the stack before it and every
 * frame after those is a new node. Children come out sorted by name.
 */
#ifndef FLAME_H
#define FLAME_H

#include "pyprof.h"

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

enum flame_esc {
	FLAME_JSON,             /* inside a JSON string inside an HTML <script> */
	FLAME_XML,              /* XML text or attribute value */
};

/*
 * Write s escaped for its context, at most max_chars characters (code
 * points; a cut string ends in "…"; 0 = no limit). Bytes that are not
 * UTF-8 become U+FFFD, so the output is always valid UTF-8.
 */
void flame_put(FILE *o, const char *s, enum flame_esc how, size_t max_chars);
/* Characters (code points) in s, counting each invalid byte as one. */
size_t flame_text_len(const char *s);

#endif /* FLAME_H */
