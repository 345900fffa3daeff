/* SPDX-License-Identifier: MIT */
/*
 * Code-object cache: name, file and line table of each code object, read
 * once. A freed code object's address can be reused by a new one, so every
 * hit is checked against a key (co_firstlineno, and the low bits of
 * co_version, or co_name's address before 3.12, xor its name's hash:
 * pbp_code_key) that the kernel copied at the sample instant, or that is
 * re-read here when there is no kernel snapshot.
 */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "cpython/codeobj.h"
#include "cpython/objects.h"
#include "core/bytes.h"
#include "core/unique.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "cpython/pystr.h"
#include "cpython/pyver.h"
#include "proc/remote.h"

#define WAYS 8
#define CODE_HDR_MAX 512
#define LINETABLE_MAX (1u << 20)
#define NAME_MAX_UTF8 1024

/* The entries, shared by a process and the children it forked (codecache_share). */
struct codestore {
	unsigned nsets;
	uint64_t clock;
	struct codeinfo *slots;     /* nsets * WAYS; addr 0 = empty; NULL until the first code object */
	size_t bytes, budget;       /* names and line tables held, and the most allowed */
	unsigned hand;              /* clock sweep over slots, for the byte budget */
	unsigned refs;              /* the caches reading it */
	uint64_t version;           /* changed whenever a slot is: see codecache_version() */
};


/* One process's view of a store: its own statistics. */
struct codecache {
	struct codestore *s;
	struct codecache_stats st;
};

struct codecache *codecache_new(unsigned capacity, size_t budget)
{
	struct codecache *c = calloc(1, sizeof(*c));
	struct codestore *st = calloc(1, sizeof(*st));
	unsigned sets = 1;

	while (sets * 2 * WAYS <= capacity)
		sets *= 2;
	if (!c || !st) {
		free(st);
		free(c);
		return NULL;
	}
	st->budget = budget;
	st->nsets = sets;       /* the slots are made at the first code object: an idle process names none */
	st->refs = 1;
	st->version = unique_next();
	c->s = st;
	return c;
}

static size_t slot_bytes(const struct codeinfo *ci)
{
	return (ci->name ? strlen(ci->name) + 1 : 0) + (ci->file ? strlen(ci->file) + 1 : 0) + ci->lt_len;
}

static void slot_clear(struct codeinfo *ci)
{
	free(ci->name);
	free(ci->file);
	free(ci->linetable);
	memset(ci, 0, sizeof(*ci));
}

void codecache_free(struct codecache *c)
{
	struct codestore *st = c ? c->s : NULL;

	free(c);
	if (!st || --st->refs > 0)
		return;
	for (unsigned i = 0; st->slots && i < st->nsets * WAYS; i++)
		slot_clear(&st->slots[i]);
	free(st->slots);
	free(st);
}

/*
 * A forked child's code objects are its parent's, at the same addresses,
 * until one side frees one and makes another there, which the key tells
 * (codecache_get). Sharing the entries rather than copying them makes a
 * fork cost no more than the handle, whatever the parent had read, and a
 * name one child read serves its siblings: a storm of short-lived children
 * running the same function reads it once, while its parent is there.
 */
struct codecache *codecache_share(struct codecache *src)
{
	struct codecache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = src->s;
	c->s->refs++;
	return c;
}

const struct codecache_stats *codecache_stats(const struct codecache *c)
{
	return &c->st;
}

uint64_t codecache_version(const struct codecache *c)
{
	return c->s->version;
}

void codecache_count_hits(struct codecache *c, uint64_t n)
{
	c->st.hits += n;
}

static void drop(struct codecache *c, struct codeinfo *ci)
{
	c->s->bytes -= slot_bytes(ci);
	slot_clear(ci);
}

/*
 * Past the byte budget, evict the least recently used of a few entries the
 * clock hand passes, until under it again: memory per process stays bounded
 * however large the target's code objects are.
 */
static void enforce_budget(struct codecache *c, const struct codeinfo *keep)
{
	struct codestore *st = c->s;
	unsigned n = st->nsets * WAYS;

	for (unsigned tries = 0; st->bytes > st->budget && tries < 2 * n; tries++) {
		struct codeinfo *victim = NULL;

		for (int k = 0; k < 4; k++, st->hand = (st->hand + 1) % n) {
			struct codeinfo *ci = &st->slots[st->hand];

			if (ci->addr && ci != keep && (!victim || ci->used < victim->used))
				victim = ci;
		}
		if (victim) {
			drop(c, victim);
			c->st.evictions++;
		}
	}
}

static struct codeinfo *set_of(struct codecache *c, uint64_t addr)
{
	uint64_t h = (addr >> 4) * 0x9E3779B97F4A7C15ull;

	return &c->s->slots[(h >> 32 & (c->s->nsets - 1)) * WAYS];
}

/*
 * A code object read while freed and not yet reused still shows its key
 * and its name's address, the name's memory perhaps already the next
 * object's name: only a live one is read (pyobj_freed).
 */
/* The code object's header, read and checked to be a live code object. */
static int read_header(struct pyproc *p, uint64_t addr, uint8_t hdr[CODE_HDR_MAX])
{
	const struct pyver *v = &p->v;
	int err;

	if (v->code_size > CODE_HDR_MAX)
		return -PBP_E_CORRUPT;
	err = remote_read_cached(p->r, addr, hdr, v->code_size);
	if (err)
		return err;
	if ((p->pycode_type && load_u64(hdr, v->ob_type) != p->pycode_type) || pyobj_freed(v, hdr))
		return -PBP_E_CORRUPT;
	return 0;
}

/* The hash of the str the header names (-1 when none is read), as the kernel reads it. */
static int64_t name_hash(struct pyproc *p, const uint8_t *hdr)
{
	const struct pbp_offsets *k = &p->v.k;
	int64_t hash = -1;

	if (k->code_hname == PBP_NOOFF || k->str_hash == PBP_NOOFF ||
	    remote_read_cached(p->r, load_u64(hdr, k->code_hname) + k->str_hash, &hash, sizeof(hash)))
		return -1;
	return hash;
}

/* The key as the kernel would have copied it, read from the target now. */
int codecache_read_key(struct pyproc *p, uint64_t addr, uint32_t *firstlineno, uint32_t *code_key)
{
	uint8_t hdr[CODE_HDR_MAX];
	int err = read_header(p, addr, hdr);

	if (err)
		return err;
	*firstlineno = load_u32(hdr, p->v.k.code_firstlineno);
	*code_key = pbp_code_key(load_u64(hdr, p->v.k.code_key), name_hash(p, hdr));
	return 0;
}

static char *read_name(struct pyproc *p, uint64_t addr, int64_t *hash, int *err)
{
	char buf[NAME_MAX_UTF8];

	*err = hash ? pystr_read_hashed(p->r, &p->v, addr, buf, sizeof(buf), hash)
		    : pystr_read(p->r, &p->v, addr, buf, sizeof(buf));
	return *err ? NULL : strdup(buf);
}

/*
 * The object still at addr holds what was read from it: read again past
 * the page cache, its name, file, line table, first line and key
 * unchanged. A code object freed while it was being read (its strings with
 * it, their memory then another object's) named a frame with a name or file
 * that was not its own: a loop making and dropping code objects
 * (CodeType.replace) had 1-2 such frames in 4,800 on 3.11-3.14. The key
 * (co_version on 3.12+) tells apart a new object whose name is at the old
 * name's address, its other words the same; the name's hash, read before
 * its characters (hash) and again now, one whose name was stored but not
 * yet its co_version (pbp_code_key), or a str made since at the name's
 * address, which shows -1 there before its characters.
 */
static int still_same(struct pyproc *p, uint64_t addr, const uint8_t *hdr, int64_t hash)
{
	const struct pyver *v = &p->v;
	const uint32_t words[] = { v->code_name, v->code_qualname, v->code_filename, v->code_linetable };
	uint8_t now[CODE_HDR_MAX];
	int err = remote_read(p->r, addr, now, v->code_size);

	if (err)
		return err;
	if (pyobj_freed(v, now))
		return -PBP_E_CORRUPT;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i] != PYVER_NOOFF && load_u64(now, words[i]) != load_u64(hdr, words[i]))
			return -PBP_E_CORRUPT;
	if (v->k.code_hname != PBP_NOOFF && v->k.str_hash != PBP_NOOFF) {
		int64_t again;

		err = remote_read(p->r, load_u64(now, v->k.code_hname) + v->k.str_hash, &again,
				  sizeof(again));
		if (err)
			return err;
		if (again != hash)
			return -PBP_E_CORRUPT;
	}
	return load_u32(now, v->k.code_firstlineno) == load_u32(hdr, v->k.code_firstlineno) &&
	       load_u32(now, v->k.code_key) == load_u32(hdr, v->k.code_key) ? 0 : -PBP_E_CORRUPT;
}

static int load(struct pyproc *p, uint64_t addr, struct codeinfo *ci)
{
	const struct pyver *v = &p->v;
	uint8_t hdr[CODE_HDR_MAX];
	uint32_t name_off = v->code_qualname != PYVER_NOOFF ? v->code_qualname : v->code_name;
	bool hashed = v->k.code_hname == name_off && v->k.str_hash != PBP_NOOFF;
	int64_t hash = -1;
	int err;

	/*
	 * Pages cached earlier may hold what a freed object's strings said:
	 * the next object's are most often made at the same addresses.
	 */
	remote_invalidate_all(p->r);
	err = read_header(p, addr, hdr);
	if (err)
		return err;
	ci->addr = addr;
	ci->firstlineno = load_u32(hdr, v->k.code_firstlineno);
	ci->code_word = (uint32_t)load_u64(hdr, v->k.code_key);
	ci->name = read_name(p, load_u64(hdr, name_off), hashed ? &hash : NULL, &err);
	ci->code_key = pbp_code_key(load_u64(hdr, v->k.code_key), hash);
	if (!err)
		ci->file = read_name(p, load_u64(hdr, v->code_filename), NULL, &err);
	if (!err)
		err = pybytes_read(p->r, v, load_u64(hdr, v->code_linetable), LINETABLE_MAX,
				   &ci->linetable, &ci->lt_len);
	if (!err)
		err = still_same(p, addr, hdr, hash);
	if (err)
		slot_clear(ci);
	return err;
}

/*
 * A forked child that exited before its code objects were read: those made
 * before the fork are in its parent at the same address. The key check
 * that follows (codecache_get) refuses one the parent has since replaced.
 */
static int load_from_origin(struct pyproc *p, uint64_t addr, struct codeinfo *ci)
{
	struct remote *own = p->r;
	int err;

	p->r = p->origin;
	err = load(p, addr, ci);
	p->r = own;
	return err;
}

/*
 * The key the kernel sent is this object's, its name's hash folded in, or
 * its word alone, as sent when the kernel could not read the hash (a page
 * it could not fault in) or found none computed: never the key of an
 * object whose name hashes otherwise.
 */
static bool key_matches(const struct codeinfo *ci, uint32_t firstlineno, uint32_t code_key)
{
	return ci->firstlineno == firstlineno && (ci->code_key == code_key || ci->code_word == code_key);
}

static struct codeinfo *victim_in(struct codeinfo *set)
{
	struct codeinfo *v = &set[0];

	for (int i = 0; i < WAYS; i++) {
		if (!set[i].addr)
			return &set[i];
		if (set[i].used < v->used)
			v = &set[i];
	}
	return v;
}

const struct codeinfo *codecache_get(struct codecache *c, struct pyproc *p, uint64_t addr,
				     const struct pbp_frame *key, int *err)
{
	struct codeinfo *set, *ci = NULL;
	uint32_t fl, nl;
	bool stale = false;

	*err = 0;
	if (!c->s->slots && !(c->s->slots = calloc((size_t)c->s->nsets * WAYS, sizeof(*c->s->slots)))) {
		*err = -PBP_E_NOMEM;
		return NULL;
	}
	set = set_of(c, addr);
	if (key) {
		fl = key->firstlineno, nl = key->code_key;
	} else {
		*err = codecache_read_key(p, addr, &fl, &nl);
		if (*err) {
			c->st.bad++;
			return NULL;
		}
	}
	for (int i = 0; i < WAYS && !ci; i++)
		if (set[i].addr == addr && key_matches(&set[i], fl, nl))
			ci = &set[i];
		else if (set[i].addr == addr)
			stale = true;
	if (ci) {
		c->st.hits++;
		ci->used = ++c->s->clock;
		return ci;
	}
	/*
	 * Another code object at this address is kept beside it, not replaced:
	 * siblings forked from one parent make different objects at the same
	 * address, and one that has exited can no longer read its own again.
	 */
	c->st.stale += stale;
	c->s->version = unique_next();     /* whatever follows may drop, fill or clear slots */
	ci = victim_in(set);
	if (ci->addr)
		c->st.evictions++;
	drop(c, ci);
	c->st.misses++;
	*err = load(p, addr, ci);
	if (*err && p->origin)
		*err = load_from_origin(p, addr, ci);
	if (*err) {
		c->st.bad++;
		return NULL;
	}
	if (!key_matches(ci, fl, nl)) {
		/* Freed and reused since the sample: do not name it after the new object. */
		c->st.stale++;
		slot_clear(ci);
		*err = -PBP_E_CORRUPT;
		return NULL;
	}
	ci->used = ++c->s->clock;
	c->s->bytes += slot_bytes(ci);
	enforce_budget(c, ci);
	return ci;
}
