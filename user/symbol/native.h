/* SPDX-License-Identifier: MIT */
/*
 * The innermost native frame of a sample, as a location of the profile:
 * "[native] deflate" in file "libz.so.1.2.13" (shown "[native] deflate
 * (libz.so.1.2.13)"), "[native] libz.so.1.2.13" when no symbol
 * covers the address, "[native] [unknown]" when no file does.
 */
#ifndef PBP_SYMBOL_NATIVE_H
#define PBP_SYMBOL_NATIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbol/natmaps.h"
#include "symbol/natsym.h"

struct agg;
struct natcache;
struct unwinder;

#define NATIVE_PREFIX "[native] "
#define NATIVE_UNKNOWN NATIVE_PREFIX "[unknown]"

/* One process's side of native naming: its mappings, read when first needed. */
struct natproc {
	pid_t pid;
	struct natmaps maps;
	uint64_t misses;        /* addresses in no mapping, after reading them again */
	struct unwinder *unw;   /* --native: made at its first stack */
	struct natcache *cache; /* --native: its frames' naming by address (natcache.h), made then too */
};

/*
 * The location naming address ip of process np->pid; its mappings are read
 * again (at most every 100 ms) when ip is in none of them, a library
 * loaded since. A location id, or -PBP_E_NOMEM.
 */
int64_t native_loc(struct natsym *ns, struct natproc *np, uint64_t ip, struct agg *a);
/* What native_loc names, unmade: false when no file is mapped at ip ([unknown]). */
bool native_frame(struct natsym *ns, struct natproc *np, uint64_t ip, struct natframe *f);
/*
 * f's location (its text, as native_text makes it), with f's mapping and
 * the address ip kept for pprof (aggnat.h). A location id, or -PBP_E_NOMEM.
 */
int64_t native_frame_loc(const struct natframe *f, uint64_t ip, struct agg *a);
/* The frame's text: name, and file ("" for none), as native_loc makes them. */
void native_text(const struct natframe *f, char *name, size_t len, const char **file);
void natproc_free(struct natproc *np);

#endif /* PBP_SYMBOL_NATIVE_H */
