/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_AGGDICT_H
#define PBP_AGGREGATE_AGGDICT_H

#include <stddef.h>
#include <stdint.h>

/*
 * An aggregate's strings and locations, each stored once with an id. One
 * dictionary is shared, by reference, by the aggregate that adds to it
 * and the aggregates taken from it (agg_take): only the one adds, and an
 * entry once made never moves, so a taken aggregate reads the ids it had
 * while more are added beside them (on another thread too, once the
 * taking was published under a lock).
 */
struct dict_loc {
	const char *name, *file;        /* interned: equal strings, equal pointers */
	int line;
	uint32_t kind;
};

struct aggdict;

struct aggdict *aggdict_new(void);
struct aggdict *aggdict_ref(struct aggdict *d);
void aggdict_unref(struct aggdict *d);  /* freed with its last reference; NULL: nothing */
/* The id of the location, added when new: >= 0, or -PBP_E_NOMEM. The adding aggregate's only. */
int64_t aggdict_loc(struct aggdict *d, const char *name, const char *file, int line, uint32_t kind);
/* The interned copy of s (equal strings, one pointer), NULL when out of memory. The adding aggregate's only. */
const char *aggdict_str(struct aggdict *d, const char *s);
uint32_t aggdict_count(const struct aggdict *d);        /* the adding aggregate's only */
/* Location id, below a count its reader had. */
const struct dict_loc *aggdict_at(const struct aggdict *d, uint32_t id);
/* About how many bytes it holds (kept as it grows: no walk). */
size_t aggdict_bytes(const struct aggdict *d);

/*
 * An open-addressing index (*tab, *cap slots, each an id + 1, 0: empty)
 * over n items kept under 70 % full: doubled and filled again from
 * hash(ctx, i) of each when it would not be. 0, or -PBP_E_NOMEM.
 */
int idtable_fit(uint32_t **tab, uint32_t *cap, uint32_t n,
		uint64_t (*hash)(const void *ctx, uint32_t i), const void *ctx);

#endif /* PBP_AGGREGATE_AGGDICT_H */
