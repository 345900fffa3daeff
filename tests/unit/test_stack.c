/* SPDX-License-Identifier: MIT */
/*
 * stack_walk over a frame chain in this very process (process_vm_readv on
 * itself): a chain that fits is kept whole, a deeper one keeps its innermost
 * and outermost frames in order and says how many it left out; a cycle is
 * corrupt, with what was walked kept: with room, each frame of it once.
 */
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "cpython/stack.h"
#include "proc/remote.h"
#include "unit.h"

struct fake_frame {
	uint64_t previous;
	uint64_t code;          /* frame i runs "code" i + 1: the walk's order shows */
	uint64_t instr;
	uint8_t owner;
	uint8_t pad[7];
};

#define CHAIN 100

static struct fake_frame chain[CHAIN];

/* chain[0] innermost, chain[CHAIN - 1] the root; every third one a shim when shims is set. */
static void build(bool shims, bool cycle)
{
	for (int i = 0; i < CHAIN; i++) {
		chain[i].previous = i + 1 < CHAIN ? (uint64_t)(uintptr_t)&chain[i + 1] : 0;
		chain[i].code = (uint64_t)i + 1;
		chain[i].instr = 1000 + (uint64_t)i;
		chain[i].owner = shims && i % 3 == 1 ? 3 : 0;
	}
	if (cycle)
		chain[CHAIN - 1].previous = (uint64_t)(uintptr_t)&chain[CHAIN / 2];
}

/* A walk reads through the page cache: a new chain is a new epoch. */
static void rebuild(struct pyproc *p, bool shims, bool cycle)
{
	build(shims, cycle);
	remote_invalidate_all(p->r);
}

static struct pyproc *open_self(void)
{
	struct pyproc *p = calloc(1, sizeof(*p));
	struct pbp_offsets *k = &p->v.k;

	p->pid = getpid();
	p->r = remote_open(p->pid, 16);
	k->fr_previous = 0, k->fr_code = 8, k->fr_instr = 16, k->fr_owner = 24;
	k->owner_cstack = 3, k->owner_interp = 0xff;
	return p;
}

/* The codes of out[0..n), against the python frames (non-shims) of the chain, innermost first. */
static void check_walk(struct pyproc *p, size_t max, bool shims)
{
	struct pbp_frame out[CHAIN];
	uint64_t want[CHAIN];
	size_t n = 0, elided = 99, nwant = 0, leaf = max - max / 2;

	for (int i = 0; i < CHAIN; i++)
		if (!(shims && i % 3 == 1))
			want[nwant++] = (uint64_t)i + 1;
	CHECK_EQ_INT(stack_walk(p, (uint64_t)(uintptr_t)&chain[0], out, max, &n, &elided, NULL), 0);
	if (nwant <= max) {
		CHECK_EQ_INT(n, nwant);
		CHECK_EQ_INT(elided, 0);
		for (size_t i = 0; i < n; i++)
			CHECK_EQ_INT(out[i].code, want[i]);
		return;
	}
	CHECK_EQ_INT(n, max);
	CHECK_EQ_INT(elided, nwant - max);
	for (size_t i = 0; i < leaf; i++)
		CHECK_EQ_INT(out[i].code, want[i]);
	for (size_t i = leaf; i < max; i++)     /* the outermost max/2, in order, the root last */
		CHECK_EQ_INT(out[i].code, want[nwant - max + i]);
	if (max > 1)    /* one frame is the leaf's; from two on the root is kept */
		CHECK_EQ_INT(out[max - 1].instr, 1000 + CHAIN - 1);
}

int main(void)
{
	struct pyproc *p = open_self();
	struct pbp_frame out[CHAIN];
	size_t n, elided;
	static const size_t maxes[] = { 1, 2, 3, 7, 10, 32, 33, 66, 67, 99, 100, 101, 200 };

	for (int shims = 0; shims <= 1; shims++) {
		rebuild(p, shims, false);
		for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++)
			check_walk(p, maxes[i], shims);
	}
	rebuild(p, false, true);
	CHECK_EQ_INT(stack_walk(p, (uint64_t)(uintptr_t)&chain[0], out, 10, &n, &elided, NULL), -PBP_E_CORRUPT);
	CHECK_EQ_INT(n, 10);
	CHECK(elided > 0);
	CHECK_EQ_INT(out[0].code, 1);
	/* Room for the frames into the loop and a lap of it: each once, none elided. */
	for (int shims = 0; shims <= 1; shims++) {
		struct pbp_frame all[2 * CHAIN];
		size_t want = 0;
		bool looped = false;

		rebuild(p, shims, true);
		CHECK_EQ_INT(stack_walk(p, (uint64_t)(uintptr_t)&chain[0], all, 2 * CHAIN, &n, &elided, &looped),
			     -PBP_E_CORRUPT);
		CHECK(looped);
		CHECK_EQ_INT(elided, 0);
		for (int i = 0; i < CHAIN; i++)
			if (!(shims && i % 3 == 1) && want < n)
				CHECK_EQ_INT(all[want++].code, (uint64_t)i + 1);
		CHECK_EQ_INT(n, want);
		CHECK_EQ_INT(n, shims ? CHAIN - CHAIN / 3 : CHAIN);
	}
	remote_close(p->r);
	free(p);
	return unit_done("stack");
}
