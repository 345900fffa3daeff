/* SPDX-License-Identifier: MIT */
/*
 * Frame chains read from user space: for `dump`, and to finish stacks the
 * kernel could not (deeper than its bound, or a page it could not touch).
 */
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "cpython/objects.h"
#include "cpython/stack.h"
#include "core/bytes.h"
#include "core/errors.h"
#include "core/limits.h"
#include "cpython/codeobj.h"
#include "cpython/linetable.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "cpython/tlbc.h"
#include "proc/remote.h"

#define FRAME_READ_MAX 512

/* Frames that run no Python code: shims the interpreter pushes for C calls. */
static bool is_shim(const struct pbp_offsets *k, const uint8_t *fr)
{
	uint8_t owner;

	if (k->fr_owner == PBP_NOOFF)
		return false;
	owner = fr[k->fr_owner];
	return owner == k->owner_cstack || owner == k->owner_interp;
}

static size_t frame_span(const struct pbp_offsets *k)
{
	uint16_t offs[] = { k->fr_previous, k->fr_code, k->fr_instr, k->fr_owner };
	size_t end = 0;

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] != PBP_NOOFF && (size_t)offs[i] + 8 > end)
			end = offs[i] + 8;
	return end;
}

/* Brent's cycle detection: O(1) memory, finds any loop in the chain. */
struct cycle {
	uint64_t tortoise;
	size_t power, lam;
};

static bool cycle_step(struct cycle *c, uint64_t hare)
{
	if (hare == c->tortoise)
		return true;
	if (c->power == c->lam) {
		c->tortoise = hare;
		c->power *= 2;
		c->lam = 0;
	}
	c->lam++;
	return false;
}

static void reverse(struct pbp_frame *f, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		struct pbp_frame t = f[i];

		f[i] = f[n - 1 - i];
		f[n - 1 - i] = t;
	}
}

/* Rotate f[0..n) left by k: f[k] comes first. */
static void rotate(struct pbp_frame *f, size_t n, size_t k)
{
	reverse(f, k);
	reverse(f + k, n - k);
	reverse(f, n);
}

/*
 * A frame as the kernel gives it, its code object's key included: read as
 * the walk meets the frame, it names the object the frame ran, or none
 * (read later, a copy made at the freed one's address took its name: dump
 * of a loop of CodeType.replace copies named 2 leaves in 75 after another
 * copy). A code object that cannot be read now gets a key none has
 * (firstlineno UINT32_MAX): the frame is unnamed, not named after another.
 */
static void frame_of(struct pyproc *p, const uint8_t *fr, struct pbp_frame *f)
{
	const struct pbp_offsets *k = &p->v.k;
	uint64_t tag = k->exec_tag_bits;

	memset(f, 0, sizeof(*f));
	f->code = load_u64(fr, k->fr_code) & ~tag;
	if (k->instr_is_int) {
		int32_t lasti;

		memcpy(&lasti, fr + k->fr_instr, 4);
		f->instr = (uint64_t)(int64_t)lasti;
	} else {
		f->instr = load_u64(fr, k->fr_instr);
	}
	if (codecache_read_key(p, f->code, &f->firstlineno, &f->code_key) != 0)
		f->firstlineno = UINT32_MAX, f->code_key = 0;
}

/*
 * The innermost `leaf` frames go to out[0..leaf); the others round a ring
 * out[leaf..max), which holds the root-most ones when the walk ends.
 */
/*
 * 3.6-3.10: a frame is an object, and one its thread returned from is
 * freed (ob_refcnt 0) onto a free list, kept as its code's zombie frame or
 * given back to the allocator, where f_back is no caller: a walk that
 * meets one was overtaken by the thread, and goes no further. The read
 * starts at the object. 3.11+ frames are not objects.
 */
static bool freed_frame(const struct pyproc *p, const uint8_t *fr)
{
	return p->v.major == 3 && p->v.minor <= 10 && pyobj_freed(&p->v, fr);
}

/*
 * Where a walk that found a cycle of lam links ends once each frame is
 * walked once: the first depth d whose frame is the one lam links before
 * it (the frames before d are the chain into the loop and one lap of it).
 * seen[] and kept[] hold the first nseen depths' frames and how many frames
 * were kept before each; SIZE_MAX when the loop began past them.
 */
static size_t cycle_cut(const uint64_t *seen, const uint32_t *kept, size_t nseen, size_t lam)
{
	for (size_t d = lam; d < nseen; d++)
		if (seen[d] == seen[d - lam])
			return kept[d];
	return SIZE_MAX;
}

/* Depths remembered to cut a cycle at its start (deeper loops keep what was walked). */
#define CYCLE_SEEN 512

int stack_walk(struct pyproc *p, uint64_t frame, struct pbp_frame *out, size_t max, size_t *n,
	       size_t *elided, bool *looped)
{
	const struct pbp_offsets *k = &p->v.k;
	uint8_t fr[FRAME_READ_MAX];
	uint64_t seen[CYCLE_SEEN];
	uint32_t kept[CYCLE_SEEN];
	size_t span = frame_span(k), leaf = max - max / 2, ring = max / 2, total = 0, cut = SIZE_MAX;
	struct cycle cyc = { 0, 1, 1 };
	int err = 0;

	if (looped)
		*looped = false;
	if (span > sizeof(fr))
		return *n = 0, *elided = 0, -PBP_E_CORRUPT;
	for (size_t depth = 0; frame && !err; depth++) {
		if (depth < CYCLE_SEEN) {
			seen[depth] = frame;
			kept[depth] = (uint32_t)total;
		}
		if (depth >= PBP_MAX_WALK) {
			err = -PBP_E_CORRUPT;
		} else if (cycle_step(&cyc, frame)) {
			err = -PBP_E_CORRUPT;
			if (looped)
				*looped = true;
			cut = cycle_cut(seen, kept, depth < CYCLE_SEEN ? depth + 1 : CYCLE_SEEN, cyc.lam);
		} else if (!(err = remote_read_cached(p->r, frame, fr, span))) {
			if (freed_frame(p, fr)) {
				err = -PBP_E_CORRUPT;
				break;
			}
			if (!is_shim(k, fr)) {
				if (total < leaf)
					frame_of(p, fr, &out[total]);
				else if (ring)
					frame_of(p, fr, &out[leaf + (total - leaf) % ring]);
				total++;
			}
			frame = load_u64(fr, k->fr_previous);
		}
	}
	if (cut <= leaf && cut < total)
		total = cut;    /* a loop: each of its frames once, not laps of it up to the bound */
	*n = total < max ? total : max;
	*elided = total - *n;
	if (*elided && ring)    /* the ring's oldest entry, the outermost frame kept, goes first */
		rotate(out + leaf, ring, (total - leaf) % ring);
	return err;
}

const char *elided_name(char *buf, size_t len, size_t n)
{
	snprintf(buf, len, "[... %zu frames elided]", n);
	return buf;
}

/* The largest bytecode offset believed, as pyver_instr_offset() bounds it. */
#define TLBC_OFFSET_MAX ((uint64_t)1 << 28)

int frame_line(const struct pyproc *p, const struct codeinfo *ci, uint64_t instr)
{
	/* 3.14t: instr is in its thread's copy of the bytecode, maybe not the code object's. */
	int64_t off = p->v.free_threaded ? tlbc_instr_offset(p, ci->addr, instr, TLBC_OFFSET_MAX) :
		pyver_instr_offset(&p->v, ci->addr, instr);

	if (off < 0)
		return (int)ci->firstlineno;
	return lt_addr2line(p->v.lt_kind, ci->linetable, ci->lt_len, (int)ci->firstlineno, off);
}
