/* SPDX-License-Identifier: MIT */
/* The innermost native frame of a sample as a location (native.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/native.h"
#include "symbol/unwind.h"
#include "aggregate/aggregate.h"
#include "aggregate/aggnat.h"
#include "core/clock.h"
#include "core/errors.h"

/*
 * A process's mappings are read again at most this often when an address
 * is in none of them: a library just loaded (import zlib) is named within
 * this, and code with no file at all (JIT) costs a read per period.
 */
#define REREAD_NS 100000000ull

static const struct natmap *find_map(struct natproc *np, uint64_t ip)
{
	const struct natmap *m = natmaps_find(&np->maps, ip);

	if (m || (np->maps.read_ns && mono_ns() - np->maps.read_ns < REREAD_NS))
		return m;
	if (natmaps_read(&np->maps, np->pid) != 0)
		return NULL;
	return natmaps_find(&np->maps, ip);
}

void native_text(const struct natframe *f, char *name, size_t len, const char **file)
{
	if (f->func[0]) {
		snprintf(name, len, NATIVE_PREFIX "%s", f->func);
		*file = f->lib;
	} else {
		/*
		 * One frame per library, not per address: a stripped library's
		 * internal code would otherwise make a frame (and a stack) of
		 * each address sampled, each thin, where the time spent in the
		 * library is what can be read. The address stays in pprof's
		 * location (native_frame_loc).
		 */
		snprintf(name, len, NATIVE_PREFIX "%s", f->lib);
		*file = NULL;
	}
}

bool native_frame(struct natsym *ns, struct natproc *np, uint64_t ip, struct natframe *f)
{
	struct natmap *m = (struct natmap *)find_map(np, ip);
	char root[64], alt[96];
	const char *base;

	if (!m || !m->path[0]) {        /* nothing mapped there, or code with no file (JIT) */
		np->misses += !m;
		return false;
	}
	if (!m->opened) {
		snprintf(root, sizeof(root), "/proc/%d/root", (int)np->pid);
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%llx-%llx", (int)np->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		m->mod = natsym_open(ns, root, m->path, alt, m->inode);
		m->opened = true;
	}
	base = strrchr(m->path, '/');
	natsym_lookup(ns, m->mod, base ? base + 1 : m->path, ip - m->start + m->offset, f);
	f->map = m;
	return true;
}

int64_t native_frame_loc(const struct natframe *f, uint64_t ip, struct agg *a)
{
	char name[NATSYM_FUNC_MAX + 16];
	struct agg_mapping am = { 0 };
	const char *file;
	struct aggnat *n;
	uint32_t had;
	uint64_t addr;
	int64_t id;

	native_text(f, name, sizeof(name), &file);
	if ((id = agg_loc(a, name, file, -1, LOC_PY)) < 0 || !f->map)
		return id;
	/* Placed already (the steady state): no build-id to format, every sample. */
	if (aggnat_get(agg_nat_of(a), (uint32_t)id, &had, &addr))
		return id;
	am.path = f->map->path;
	natsym_build_id(f->map->mod, am.build_id, sizeof(am.build_id));
	am.start = f->map->start, am.limit = f->map->end, am.offset = f->map->offset;
	if (!(n = agg_nat(a)) || aggnat_set(n, (uint32_t)id, &am, ip) != 0)
		return -PBP_E_NOMEM;
	return id;
}

int64_t native_loc(struct natsym *ns, struct natproc *np, uint64_t ip, struct agg *a)
{
	struct natframe f;

	if (!native_frame(ns, np, ip, &f))
		return agg_loc(a, NATIVE_UNKNOWN, NULL, -1, LOC_PY);
	return native_frame_loc(&f, ip, a);
}

void natproc_free(struct natproc *np)
{
	natmaps_free(&np->maps);
	unwinder_free(np->unw);
	np->unw = NULL;
	free(np->cache);
	np->cache = NULL;
}
