/* SPDX-License-Identifier: MIT */
/* Native and Python frames in one stack (natstack.h). */
#include <stdlib.h>
#include <string.h>

#include "symbol/natstack.h"
#include "aggregate/aggregate.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/limits.h"
#include "symbol/natcache.h"
#include "symbol/natfp.h"
#include "symbol/natfold.h"
#include "symbol/unwind.h"

uint32_t natstack_groups(const struct pbp_sample *s, uint32_t npy, uint32_t *starts)
{
	uint32_t k = 0, nk = s->nframes < npy ? s->nframes : npy;

	if (npy == 0)
		return 0;
	starts[k++] = 0;
	if (!(s->flags & PBP_F_ENTRIES)) {      /* before 3.11: an activation per frame */
		for (uint32_t i = 1; i < npy; i++)
			starts[k++] = i;
		return k;
	}
	/* Kernel frame i (innermost 0) is py[npy - 1 - i]: outermost first, so i descending. */
	for (uint32_t i = nk; i-- > 0;) {
		uint32_t at = npy - 1 - i;

		if (at > 0 && (s->entries[i >> 6] >> (i & 63) & 1))
			starts[k++] = at;
	}
	return k;
}

struct merge {
	uint32_t *out, n, max;
	const uint32_t *py;
	const uint32_t *starts;
	uint32_t npy, ngroups;
};

static void put(struct merge *m, uint32_t loc)
{
	if (m->n < m->max)
		m->out[m->n++] = loc;
}

static void put_group(struct merge *m, uint32_t g)
{
	uint32_t end = g + 1 < m->ngroups ? m->starts[g + 1] : m->npy;

	for (uint32_t i = m->starts[g]; i < end; i++)
		put(m, m->py[i]);
}

/*
 * One native frame's location, whether it is an activation of the loop or
 * call machinery (fold), and whether it has no function's name (named by
 * its library, or [unknown]).
 */
static int64_t name_frame(struct natsym *ns, struct natproc *np, uint64_t pc, struct agg *a,
			  struct natfold_frame *fold, bool *nameless, bool *unmapped)
{
	struct natframe f;
	bool eval;

	*nameless = true;
	*fold = (struct natfold_frame){ 0 };
	if (!native_frame(ns, np, pc, &f)) {
		*unmapped = true;
		return agg_loc(a, NATIVE_UNKNOWN, NULL, -1, LOC_PY);
	}
	/* The function, or a part the compiler split off it ("_PyEval_EvalFrameDefault.cold"). */
	*nameless = !f.func[0];
	eval = strncmp(f.func, EVAL_FUNC, strlen(EVAL_FUNC)) == 0 &&
	       (f.func[strlen(EVAL_FUNC)] == '\0' || f.func[strlen(EVAL_FUNC)] == '.');
	natfold_classify(f.func, f.lib, eval, fold);
	return native_frame_loc(&f, pc, a);
}

/* name_frame's answer, from np's cache when pc was named under the same mappings and ids. */
static int64_t frame_loc(struct natsym *ns, struct natproc *np, uint64_t pc, struct agg *a,
			 struct natfold_frame *fold, bool *nameless, struct natstack_stats *st)
{
	const struct natcache_entry *hit = NULL;
	struct natcache_entry e = { .pc = pc };
	bool unmapped = false;
	int64_t loc;

	if (np->cache || (np->cache = calloc(1, sizeof(*np->cache))) != NULL) {
		natcache_check(np->cache, np->maps.read_ns, agg_loc_epoch(a));
		hit = natcache_get(np->cache, pc);
	}
	if (hit) {
		st->cached++;
		*fold = hit->fold;
		*nameless = hit->nameless;
		return hit->loc;
	}
	/* An address in no mapping is not kept: its next sample may find a library loaded since. */
	if ((loc = name_frame(ns, np, pc, a, fold, nameless, &unmapped)) < 0 || !np->cache || unmapped)
		return loc;
	/* Naming may have read the mappings again: what was kept before is forgotten then. */
	natcache_check(np->cache, np->maps.read_ns, agg_loc_epoch(a));
	e.loc = (uint32_t)loc;
	e.nameless = *nameless;
	e.fold = *fold;
	natcache_put(np->cache, &e);
	return loc;
}

/*
 * No frame named as the loop, yet Python frames to place: a build whose
 * loop has no symbol over the code that runs (sid's 3.14 keeps only a
 * 1.2 KiB stub of _PyEval_EvalFrameDefault in .dynsym; the body, 84 KiB
 * split off by the profile-guided build, is nameless; 3.13 likewise). .eh_frame_hdr
 * still bounds every function, and the loop is the largest in any CPython
 * by far: the nameless frames in the largest function on the stack, when
 * it spans LOOP_MIN_SPAN or more, are its activations. How many found.
 */
#define LOOP_MIN_SPAN (32u << 10)

static uint32_t nameless_loop(struct unwinder *unw, const uint64_t *pcs, size_t npc,
			      const bool *nameless, struct natfold_frame *fold)
{
	uint64_t start[NATIVE_MAX_FRAMES], end, best = 0, span = LOOP_MIN_SPAN - 1;
	uint32_t acts = 0;

	for (size_t i = 0; i < npc; i++) {
		start[i] = 0;
		if (!nameless[i] || !unwind_func_span(unw, pcs[i], &start[i], &end))
			continue;
		if (end - start[i] > span) {
			span = end - start[i];
			best = start[i];
		}
	}
	for (size_t i = 0; best && i < npc; i++) {
		fold[i].eval = nameless[i] && start[i] == best;
		acts += fold[i].eval;
	}
	return acts;
}

/* The outermost activation to be replaced by a group (npc when groups go at the root). */
static size_t outer_replaced(const struct natfold_frame *fold, size_t npc, uint32_t acts,
			     uint32_t paired, uint32_t ngroups)
{
	if (paired < ngroups)
		return npc;
	for (size_t i = npc, seen = 0; i-- > 0;) {
		if (fold[i].eval && acts - seen <= paired)
			return i;
		seen += fold[i].eval;
	}
	return npc;
}

/* The native frames root first, each activation replaced by its group (paired from the innermost). */
static int weave(struct merge *m, struct natsym *ns, struct natproc *np, const uint64_t *pcs,
		 size_t npc, bool cut, struct agg *a, struct natstack_stats *st)
{
	int64_t locs[NATIVE_MAX_FRAMES];
	struct natfold_frame fold[NATIVE_MAX_FRAMES];
	bool nameless[NATIVE_MAX_FRAMES], drop[NATIVE_MAX_FRAMES];
	uint32_t acts = 0, paired, g;

	for (size_t i = 0; i < npc; i++) {
		if ((locs[i] = frame_loc(ns, np, pcs[i], a, &fold[i], &nameless[i], st)) < 0)
			return (int)locs[i];
		acts += fold[i].eval;
	}
	if (!acts && m->ngroups && np->unw)
		acts = nameless_loop(np->unw, pcs, npc, nameless, fold);
	paired = acts < m->ngroups ? acts : m->ngroups;
	st->unpaired += acts != m->ngroups;
	if (m->ngroups)
		st->folded += natfold_mark(fold, npc, outer_replaced(fold, npc, acts, paired, m->ngroups),
					   drop);
	else
		memset(drop, 0, npc * sizeof(*drop));
	if (cut) {
		int64_t id = agg_loc(a, NATIVE_CUT, NULL, -1, LOC_PY);

		if (id < 0)
			return (int)id;
		put(m, (uint32_t)id);
	}
	/* Groups with no activation (the walk stopped short of them) go at the root. */
	for (g = 0; g < m->ngroups - paired; g++)
		put_group(m, g);
	/* Outer activations past the groups stay as they are. */
	for (size_t i = npc, seen = 0; i-- > 0;) {
		if (fold[i].eval && acts - seen <= paired) {
			put_group(m, g++);
			seen++;
			continue;
		}
		seen += fold[i].eval;
		/* A run of one library's nameless frames is one frame: calls inside it are unknown. */
		if (!drop[i] && !(nameless[i] && m->n && m->out[m->n - 1] == (uint32_t)locs[i]))
			put(m, (uint32_t)locs[i]);
	}
	return 0;
}

int native_stack(struct natsym *ns, struct natproc *np, const struct pbp_sample *s,
		 const struct pbp_ustack *u, struct agg *a, uint32_t *locs, uint32_t *n,
		 uint32_t max, struct natstack_stats *st)
{
	static uint32_t py[PBP_MAX_LOCS], starts[PBP_MAX_LOCS];
	struct ustack_in in = { (pid_t)s->tid, s->ip, s->sp, s->bp, u->data, u->len };
	uint64_t pcs[NATIVE_MAX_FRAMES], t0 = mono_ns();
	struct merge m = { locs, 0, max, py, starts, *n, 0 };
	size_t npc = 0;
	bool cut = false;
	int err;

	if (*n > PBP_MAX_LOCS)
		return 0;
	if (u->magic == PBP_UADDRS_MAGIC) {     /* --native=fp: the kernel walked it already */
		natfp_pcs(u, s->ip, pcs, NATIVE_MAX_FRAMES, &npc, &cut);
	} else {
		uint64_t again;

		if (!np->unw && !(np->unw = unwinder_new(np->pid)))
			return -PBP_E_NOMEM;
		again = unwind_remembered(np->unw);
		err = unwind_stack(np->unw, &in, pcs, NATIVE_MAX_FRAMES, &npc, &cut);
		if (err)
			return err;
		st->walked_again += unwind_remembered(np->unw) - again;
	}
	memcpy(py, locs, *n * sizeof(*py));
	m.ngroups = natstack_groups(s, *n, starts);
	err = weave(&m, ns, np, pcs, npc, cut, a, st);
	if (err) {      /* the Python frames as they were */
		memcpy(locs, py, *n * sizeof(*py));
		return err;
	}
	*n = m.n;
	st->stacks++;
	st->frames += npc;
	st->cut += cut;
	st->ns += mono_ns() - t0;
	return 0;
}
