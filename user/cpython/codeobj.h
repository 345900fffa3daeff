/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_CODEOBJ_H
#define PBP_CPYTHON_CODEOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pybpfprof.h"

struct pyproc;

struct codeinfo {
	uint64_t addr;
	uint32_t firstlineno, code_key; /* the key that tells a reused address apart */
	uint32_t code_word;             /* code_key's word alone: a key made when the name had no hash */
	char *name;                     /* co_qualname on 3.11+, co_name before */
	char *file;
	uint8_t *linetable;
	size_t lt_len;
	uint64_t used;
};

struct codecache_stats {
	uint64_t hits, misses, stale, bad, evictions;
};

struct codecache;

/* At most capacity entries holding at most budget bytes of names and line tables. */
struct codecache *codecache_new(unsigned capacity, size_t budget);
void codecache_free(struct codecache *c);
/*
 * A cache for a process forked from the one src is of, sharing src's
 * entries: its code objects are at the same addresses, with the same
 * contents, until one of them frees one, which the kernel's key tells
 * (codecache_get). Each keeps its own statistics; the entries go with the
 * last of them.
 */
struct codecache *codecache_share(struct codecache *src);
/*
 * The code object at addr. key (firstlineno, code_key) comes from the kernel's
 * snapshot; with key == NULL the header is re-read to validate the entry.
 * Returns NULL with *err set when addr is not a readable code object.
 */
const struct codeinfo *codecache_get(struct codecache *c, struct pyproc *p, uint64_t addr,
				     const struct pbp_frame *key, int *err);
/*
 * The key of the code object at addr as the kernel would copy it, read now:
 * a walk in user space keeps it with each frame, so that the object named
 * later is the one the walk met, not another made at its address since.
 * Neither a freed object nor anything but a code object has one.
 */
int codecache_read_key(struct pyproc *p, uint64_t addr, uint32_t *firstlineno, uint32_t *code_key);
const struct codecache_stats *codecache_stats(const struct codecache *c);
/*
 * Changes whenever an entry is made, dropped or replaced (never on a hit),
 * and no two caches' versions are ever equal: while it stays, every lookup
 * answered before is answered again by the same entry, as it was.
 */
uint64_t codecache_version(const struct codecache *c);
/* Lookups answered without asking (symbolize's stack memo): counted as the hits they stand for. */
void codecache_count_hits(struct codecache *c, uint64_t n);

#endif /* PBP_CPYTHON_CODEOBJ_H */
