/* SPDX-License-Identifier: MIT */
/*
 * Raw kernel samples to locations: code objects named through the cache,
 * lines from the line table, and stacks the kernel could not finish
 * completed from where it stopped.
 */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "symbol/symbolize.h"
#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "core/limits.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/stack.h"
#include "cpython/thread.h"

#define UNKNOWN_FRAME "[unknown]"

/*
 * Recently named (code object, instruction) pairs: their line and location.
 * A profile keeps hitting the same few pairs, and naming one from scratch
 * means decoding the line table from its start and hashing the name and file
 * strings into the aggregate: most of the cost of a sample. Direct-mapped.
 * A slot answers only for the code-cache entry it was filled from, as it was
 * then (address, key, line-table buffer), so a code object loaded since at a
 * reused address, or into a reused cache slot, never gets another's lines;
 * its location is checked against the aggregate before it is used.
 * This program is single-threaded.
 */
#define FRAME_MEMO 4096         /* power of two */

struct frame_memo {
	const struct codeinfo *ci;
	const uint8_t *linetable;
	size_t lt_len;
	uint64_t addr, instr;
	uint32_t firstlineno, code_key;
	int line;
	const struct agg *agg;      /* loc is an id in this aggregate; NULL: none yet */
	int64_t loc;
	/*
	 * The code cache's and the aggregate's versions when loc was last found
	 * to hold: while both stay, nothing it was checked against has changed.
	 */
	uint64_t codes, locs;
};

static struct frame_memo frame_memo[FRAME_MEMO];

static bool memo_is(const struct frame_memo *m, const struct codeinfo *ci, uint64_t instr)
{
	return m->ci == ci && m->addr == ci->addr && m->instr == instr &&
	       m->linetable == ci->linetable && m->lt_len == ci->lt_len &&
	       m->firstlineno == ci->firstlineno && m->code_key == ci->code_key;
}

static struct frame_memo *memo_of(const struct pyproc *p, const struct codeinfo *ci, uint64_t instr)
{
	uint64_t h = ((ci->addr >> 4) ^ instr * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	struct frame_memo *m = &frame_memo[(h >> 40) & (FRAME_MEMO - 1)];

	if (!memo_is(m, ci, instr)) {
		*m = (struct frame_memo){ .ci = ci, .linetable = ci->linetable, .lt_len = ci->lt_len,
					  .addr = ci->addr, .instr = instr,
					  .firstlineno = ci->firstlineno, .code_key = ci->code_key,
					  .line = frame_line(p, ci, instr), .loc = -1 };
	}
	return m;
}

/* The aggregate still holds that location (it is not reset during a run, but make sure). */
static bool loc_still(const struct agg *a, const struct frame_memo *m, const struct codeinfo *ci)
{
	const char *name, *file;
	uint32_t kind;
	int line;

	if (m->agg != a || m->loc < 0 || m->loc >= (int64_t)agg_nlocs(a))
		return false;
	agg_loc_info(a, (uint32_t)m->loc, &name, &file, &line, &kind);
	return kind == LOC_PY && line == m->line && strcmp(name, ci->name) == 0 &&
	       strcmp(file, ci->file) == 0;
}

/* f's location, its code object checked against the key f carries (the kernel's or the walk's). */
static int64_t frame_loc(struct pyproc *p, struct agg *a, const struct pbp_frame *f, struct symstats *st)
{
	int err;
	const struct codeinfo *ci = codecache_get(p->codes, p, f->code, f, &err);
	struct frame_memo *m;
	uint64_t codes, locs;
	int64_t id;

	st->frames++;
	if (!ci) {
		/* Freed or unreadable since the sample: say so rather than drop the frame. */
		st->unknown_frames++;
		return agg_loc(a, UNKNOWN_FRAME, NULL, -1, LOC_PY);
	}
	m = memo_of(p, ci, f->instr);
	codes = codecache_version(p->codes);
	locs = agg_loc_epoch(a);
	if (m->agg == a && m->loc >= 0 && m->codes == codes && m->locs == locs)
		return m->loc;
	if (loc_still(a, m, ci)) {
		m->codes = codes, m->locs = locs;
		return m->loc;
	}
	id = agg_loc(a, ci->name, ci->file, m->line, LOC_PY);
	if (id >= 0) {
		m->agg = a;
		m->loc = id;
		m->codes = codes, m->locs = locs;
	}
	return id;
}

/*
 * The kernel's frames to keep when the walk resumed after them found a
 * loop: the kernel copied laps of it up to its bound (it does not look for
 * loops). When its last frames are the lap the resumed walk kept (more[0..
 * nmore): it began inside the loop), the kernel's run of laps is cut after
 * its first, and the resumed walk adds nothing. Else all of the kernel's.
 */
static bool same_frame(const struct pbp_frame *a, const struct pbp_frame *b)
{
	return a->code == b->code && a->instr == b->instr;  /* the rest only the kernel may fill in */
}

static size_t loop_cut(const struct pbp_frame *k, size_t nk, size_t *nmore, const struct pbp_frame *more)
{
	size_t lap = *nmore, m;

	if (!lap || nk < lap)
		return nk;
	for (size_t i = 0; i < lap; i++)
		if (!same_frame(&k[nk - lap + i], &more[i]))
			return nk;
	for (m = nk - lap; m > 0 && same_frame(&k[m - 1], &k[m - 1 + lap]); m--)
		;
	*nmore = 0;
	return m + lap;
}

/*
 * Frames the kernel did not copy, read now from where it stopped; *nk, the
 * kernel's frames to keep (fewer when the two walks went round a loop).
 * *short_of_root: the walk stopped at a frame it could not read (not a
 * loop, cut whole), or, resumed where the kernel stopped, its thread had
 * ended by the walk's end: the stack's outer frames are missing. An ended
 * thread's frames are freed, and another thread's may be made where they were (3.6-3.10's frame free
 * list, a data-stack chunk reused): read on, they spliced that thread's
 * callers under this one's (1.8 % of 3.6's and 2.8 % of 3.10's samples of
 * threads ending every few ms with 350 frames; 0.3 % on 3.12).
 */
static int complete(struct pyproc *p, const struct pbp_sample *s, struct pbp_frame *more,
		    size_t max, size_t *n, size_t *elided, size_t *nk, bool *short_of_root)
{
	uint64_t frame = s->resume;
	bool looped = false;
	int err = 0;

	*n = *elided = 0;
	if (!frame && s->nframes == 0 && s->tstate)
		err = pythread_frame(p, s->tstate, &frame);
	if (!err && frame)
		err = stack_walk(p, frame, more, max, n, elided, &looped);
	if (!err && *n && s->resume && !pythread_alive(p, (pid_t)s->tid)) {
		*n = *elided = 0;
		err = -PBP_E_GONE;
	}
	if (looped)
		*nk = loop_cut(s->frames, *nk, n, more);
	*short_of_root = err && !looped && (*n || *nk);
	return err;
}

/*
 * A stack whose outer frames could not be read (its thread ended and they
 * were freed, a page unmapped) keeps its inner ones under this root, never
 * as if its outermost frame read were its thread's first. *walked: the
 * frames the walk kept, its room full: the outermost makes way for the mark.
 */
static int mark_short(struct agg *a, uint32_t *locs, uint32_t *k, struct symstats *st,
		      size_t *walked, size_t room)
{
	int64_t id = agg_loc(a, SHORT_OF_ROOT, NULL, -1, LOC_PY);

	if (id < 0)
		return (int)id;
	if (*walked && *walked >= room)
		*walked = room - 1;
	locs[(*k)++] = (uint32_t)id;
	st->short_of_root++;
	return 0;
}


/*
 * Locations of frames a walk kept (innermost first, max of them at most),
 * root first after locs[0..*k): the marker in the middle when it left some
 * out. 0 or -PBP_E_NOMEM.
 */
static int name_walked(struct pyproc *p, struct agg *a, const struct pbp_frame *f, size_t n,
		       size_t max, size_t elided, uint32_t *locs, uint32_t *k, struct symstats *st)
{
	size_t cut = elided ? max - max / 2 : 0;    /* frames kept on the leaf side */

	for (size_t i = n; i-- > 0;) {
		int64_t id;

		if (elided && i + 1 == cut) {
			char name[64];

			id = agg_loc(a, elided_name(name, sizeof(name), elided), NULL, -1, LOC_PY);
			if (id < 0)
				return (int)id;
			locs[(*k)++] = (uint32_t)id;
			st->elided++;
		}
		id = frame_loc(p, a, &f[i], st);     /* the key its walk read */
		if (id < 0)
			return (int)id;
		locs[(*k)++] = (uint32_t)id;
	}
	return 0;
}

/*
 * Frames a walk may keep in a stack of max locations that has `used` Python
 * frames already: PBP_MAX_DEPTH in all at most, and a location is the marker's.
 */
static size_t walk_room(uint32_t max, size_t used)
{
	size_t room = max > used + 1 ? max - used - 1 : 0;
	size_t depth = PBP_MAX_DEPTH > used ? PBP_MAX_DEPTH - used : 0;

	return room < depth ? room : depth;
}

int symbolize(struct pyproc *p, const struct pbp_sample *s, struct agg *a, uint32_t *locs,
	      uint32_t max, uint32_t *n, struct symstats *st)
{
	struct pbp_frame *more = NULL;
	size_t nmore = 0, elided = 0, room = walk_room(max, s->nframes), nk = s->nframes;
	uint32_t k = 0;
	bool short_of_root = false;
	int err = 0, nerr = 0;

	*n = 0;
	st->samples++;
	if (s->flags & (PBP_F_TRUNCATED | PBP_F_FAULT | PBP_F_NO_TSTATE)) {
		more = malloc(sizeof(*more) * (room ? room : 1));
		if (!more)
			return -PBP_E_NOMEM;
		err = complete(p, s, more, room, &nmore, &elided, &nk, &short_of_root);
		if (err)
			st->failed++;
		else
			st->completed++;
	}
	if (short_of_root)
		nerr = mark_short(a, locs, &k, st, &nmore, room);
	/* Innermost first in the sample; the profile wants the root first. */
	if (!nerr)
		nerr = name_walked(p, a, more, nmore, room, elided, locs, &k, st);
	for (int i = (int)nk - 1; !nerr && i >= 0 && k < max; i--) {
		int64_t id = frame_loc(p, a, &s->frames[i], st);

		if (id < 0)
			nerr = (int)id;
		else
			locs[k++] = (uint32_t)id;
	}
	if (!nerr && k == 0)
		st->no_python++;
	free(more);
	*n = k;
	return k ? 0 : nerr ? nerr : err;
}

int symbolize_thread(struct pyproc *p, uint64_t tstate, struct agg *a, uint32_t *locs,
		     uint32_t max, uint32_t *n, struct symstats *st)
{
	size_t room = walk_room(max, 0), nf = 0, elided = 0;
	struct pbp_frame *frames = malloc(sizeof(*frames) * (room ? room : 1));
	uint64_t frame = 0;
	uint32_t k = 0;
	bool looped = false;
	int err, nerr = 0;

	*n = 0;
	if (!frames)
		return -PBP_E_NOMEM;
	err = pythread_frame(p, tstate, &frame);
	if (!err && frame)
		err = stack_walk(p, frame, frames, room, &nf, &elided, &looped);
	/* A walk that failed part way keeps what it read, as a sample's does: under a mark, but for a loop. */
	if (err && !looped && nf)
		nerr = mark_short(a, locs, &k, st, &nf, room);
	if (!nerr)
		nerr = name_walked(p, a, frames, nf, room, elided, locs, &k, st);
	free(frames);
	*n = k;
	return k ? 0 : nerr ? nerr : err;
}

/*
 * A process's recent stacks, direct-mapped by the kernel's frames. Naming a
 * stack of 30 frames again was most of what a sample cost the agent, and a
 * busy process keeps giving the same few. An entry is kept only for a stack
 * whose naming loaded nothing (each frame's code object answered by the
 * code cache as it was) and named no frame [unknown] (a code object that
 * could not be read is tried again at the next sample); it answers only
 * while the code cache has changed no entry (codecache_version) and the
 * aggregate has kept its locations (agg_loc_epoch). Then naming again
 * would look up the same entries, decode the same lines and find the same
 * locations: a code object freed since and another made at its address
 * differs in the kernel's key, or its load changes the cache, and the
 * stack is named anew.
 */
#define STACK_MEMO 32           /* per process; power of two */
#define MEMO_FRAMES 64          /* deeper stacks are named as they come: an entry holds ~1.8 KB at most */

struct memo_stack {
	uint64_t hash, codes, locs;     /* codes, locs: the two versions it was named under */
	uint32_t nframes, nlocs;
	struct pbp_frame *frames;       /* nframes, then nlocs location ids; NULL: empty */
};

struct stackmemo {
	struct memo_stack e[STACK_MEMO];
};

static uint64_t frames_hash(const struct pbp_frame *f, uint32_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ n;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ f[i].code ^ f[i].instr * 0xBF58476D1CE4E5B9ull ^
		     ((uint64_t)f[i].firstlineno << 32 | f[i].code_key)) * 0x94D049BB133111EBull;
	return h;
}

static bool memo_holds(const struct memo_stack *e, const struct pbp_sample *s, uint64_t h,
		       uint64_t codes, uint64_t locs, uint32_t max)
{
	return e->frames && e->hash == h && e->nframes == s->nframes && e->codes == codes &&
	       e->locs == locs && e->nlocs <= max &&
	       memcmp(e->frames, s->frames, s->nframes * sizeof(*s->frames)) == 0;
}

/* Keep what was named; a failed allocation only leaves the entry empty. */
static void memo_keep(struct memo_stack *e, const struct pbp_sample *s, uint64_t h, uint64_t codes,
		      uint64_t locs, const uint32_t *ids, uint32_t n)
{
	size_t fbytes = s->nframes * sizeof(*s->frames);
	struct pbp_frame *mem = realloc(e->frames, fbytes + n * sizeof(*ids));

	if (!mem) {
		free(e->frames);
		*e = (struct memo_stack){ 0 };
		return;
	}
	memcpy(mem, s->frames, fbytes);
	memcpy(mem + s->nframes, ids, n * sizeof(*ids));
	*e = (struct memo_stack){ h, codes, locs, s->nframes, n, mem };
}

int symbolize_memo(struct stackmemo **m, struct pyproc *p, const struct pbp_sample *s, struct agg *a,
		   uint32_t *locs, uint32_t max, uint32_t *n, struct symstats *st)
{
	uint64_t h, codes = codecache_version(p->codes), lv = agg_loc_epoch(a), unknown = st->unknown_frames;
	struct memo_stack *e;
	int err;

	/* A stack finished from the target's memory, or with no frame, is named as it comes. */
	if ((s->flags & (PBP_F_TRUNCATED | PBP_F_FAULT | PBP_F_NO_TSTATE)) || s->nframes == 0 ||
	    s->nframes > MEMO_FRAMES || (!*m && !(*m = calloc(1, sizeof(**m)))))
		return symbolize(p, s, a, locs, max, n, st);
	h = frames_hash(s->frames, s->nframes);
	e = &(*m)->e[(h >> 32) & (STACK_MEMO - 1)];
	if (memo_holds(e, s, h, codes, lv, max)) {
		memcpy(locs, e->frames + e->nframes, e->nlocs * sizeof(*locs));
		*n = e->nlocs;
		/* As naming it again would have counted: a sample, its frames, each a code-cache hit. */
		st->samples++;
		st->frames += e->nlocs;
		st->reused++;
		codecache_count_hits(p->codes, e->nlocs);
		return 0;
	}
	err = symbolize(p, s, a, locs, max, n, st);
	if (!err && *n && st->unknown_frames == unknown && codecache_version(p->codes) == codes &&
	    agg_loc_epoch(a) == lv)
		memo_keep(e, s, h, codes, lv, locs, *n);
	return err;
}

void stackmemo_free(struct stackmemo *m)
{
	if (!m)
		return;
	for (int i = 0; i < STACK_MEMO; i++)
		free(m->e[i].frames);
	free(m);
}
