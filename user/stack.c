/* SPDX-License-Identifier: MIT */
/*
 * Frame chains read from user space: for `dump`, and to finish stacks the
 * kernel could not (deeper than its bound, or a page it could not touch).
 */
#include <string.h>

#include "pyprof.h"

#define FRAME_READ_MAX 512

static uint64_t rd64(const uint8_t *b, uint32_t off)
{
	uint64_t x;

	memcpy(&x, b + off, 8);
	return x;
}

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

int stack_walk(struct pyproc *p, uint64_t frame, struct pbp_frame *out, size_t max, size_t *n)
{
	const struct pbp_offsets *k = &p->v.k;
	uint8_t fr[FRAME_READ_MAX];
	size_t span = frame_span(k);
	struct cycle cyc = { 0, 1, 1 };
	int err = 0;

	*n = 0;
	if (span > sizeof(fr))
		return -PBP_E_CORRUPT;
	for (size_t depth = 0; frame; depth++) {
		if (depth >= PBP_MAX_DEPTH || cycle_step(&cyc, frame))
			return -PBP_E_CORRUPT;
		err = remote_read_cached(p->r, frame, fr, span);
		if (err)
			return err;
		if (!is_shim(k, fr) && *n < max) {
			struct pbp_frame *f = &out[(*n)++];
			uint64_t tag = k->exec_tag_bits;

			memset(f, 0, sizeof(*f));
			f->code = rd64(fr, k->fr_code) & ~tag;
			if (k->instr_is_int) {
				int32_t lasti;

				memcpy(&lasti, fr + k->fr_instr, 4);
				f->instr = (uint64_t)(int64_t)lasti;
			} else {
				f->instr = rd64(fr, k->fr_instr);
			}
		}
		frame = rd64(fr, k->fr_previous);
	}
	return 0;
}

int frame_line(const struct pyproc *p, const struct codeinfo *ci, uint64_t instr)
{
	int64_t off = pyver_instr_offset(&p->v, ci->addr, instr);

	if (off < 0)
		return (int)ci->firstlineno;
	return lt_addr2line(p->v.lt_kind, ci->linetable, ci->lt_len, (int)ci->firstlineno, off);
}
