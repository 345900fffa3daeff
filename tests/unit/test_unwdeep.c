/* SPDX-License-Identifier: MIT */
/*
 * libdwfl's walks remembered from frames past the second (unwind.c's
 * KEYED): two samples of this process whose first two frames differ
 * (a leaf called through two different functions) but whose third is the
 * same frame in the same state (one call site, one stack) share the walk
 * from there: the second is finished from the memo, to exactly the frames
 * libdwfl gives it with the memo off. A word read past the third frame
 * that differs (another return address on the stack) is walked again.
 */
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "unit.h"
#include "symbol/natstack.h"
#include "symbol/unwind.h"

#define COPY 4096

static uint8_t copies[2][COPY];
static struct ustack_in taken[2];
static volatile int turn;       /* a global: no register of the callers holds it */

__attribute__((no_sanitize("address"))) static void raw_copy(uint8_t *to, uint64_t from, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)from;

	for (size_t i = 0; i < len; i++)
		to[i] = p[i];
}

__attribute__((noinline)) static void deep_leaf(void)
{
	struct ustack_in *in = &taken[turn];

	in->tid = (pid_t)syscall(SYS_gettid);
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(in->ip), "=r"(in->sp), "=r"(in->bp));
	raw_copy(copies[turn], in->sp, COPY);
	in->stack = copies[turn];
	in->len = COPY;
}

/* Two callers of the leaf: the samples' second frames differ in their pc. */
__attribute__((noinline)) static void deep_mid_a(void)
{
	deep_leaf();
	__asm__ volatile("" ::: "memory");      /* no tail call: a frame of its own */
}

__attribute__((noinline)) static void deep_mid_b(void)
{
	__asm__ volatile("nop\n\tnop" ::: "memory");
	deep_leaf();
	__asm__ volatile("" ::: "memory");
}

static void (*const mids[2])(void) = { deep_mid_a, deep_mid_b };

/* The third frame: one call site for both. */
__attribute__((noinline)) static void deep_outer(void)
{
	mids[turn]();
	__asm__ volatile("" ::: "memory");
}

static bool same_pcs(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	return na == nb && memcmp(a, b, na * sizeof(*a)) == 0;
}

int main(void)
{
	struct unwinder *u = unwinder_new(getpid());
	uint64_t want[2][NATIVE_MAX_FRAMES], pcs[NATIVE_MAX_FRAMES], hits;
	size_t nwant[2], n, at = COPY;
	bool cut;

	CHECK(u);
	if (!u)
		return unit_done("unwdeep");
	for (turn = 0; turn < 2; turn++)
		deep_outer();
	__asm__ volatile("" ::: "memory");
	/* libdwfl's own walks, the memo off: what a remembered walk must give. */
	unwind_remember(u, false);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ_INT(unwind_stack(u, &taken[i], want[i], NATIVE_MAX_FRAMES, &nwant[i], &cut), 0);
		CHECK(nwant[i] >= 5);
	}
	CHECK(taken[0].sp == taken[1].sp);
	CHECK(nwant[0] == nwant[1] && want[0][1] != want[1][1] && want[0][2] == want[1][2]);
	CHECK(same_pcs(want[0] + 2, nwant[0] - 2, want[1] + 2, nwant[1] - 2));
	unwind_remember(u, true);
	CHECK_EQ_INT(unwind_stack(u, &taken[0], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
	CHECK(same_pcs(want[0], nwant[0], pcs, n));
	/* The other leaf's caller: its second frame unknown, its third remembered. */
	hits = unwind_remembered(u);
	CHECK_EQ_INT(unwind_stack(u, &taken[1], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
	CHECK_EQ_INT(unwind_remembered(u), hits + 1);
	CHECK(same_pcs(want[1], nwant[1], pcs, n));
	/* deep_outer's return address made its caller's caller's: walked again, not remembered. */
	for (size_t i = 0; i + 8 <= COPY && at == COPY; i += 8) {
		uint64_t w;

		memcpy(&w, copies[0] + i, 8);
		if (w == want[0][3] + 1)
			at = i;
	}
	CHECK(at < COPY);
	if (at < COPY) {
		uint64_t other = want[0][4] + 1;

		memcpy(copies[0] + at, &other, 8);
		hits = unwind_remembered(u);
		CHECK_EQ_INT(unwind_stack(u, &taken[0], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		CHECK_EQ_INT(unwind_remembered(u), hits);
		CHECK(n >= 4 && pcs[2] == want[0][2] && pcs[3] == want[0][4]);
	}
	unwinder_free(u);
	return unit_done("unwdeep");
}
