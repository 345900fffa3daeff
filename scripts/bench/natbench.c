/* SPDX-License-Identifier: MIT */
/*
 * The native leaf's cost per sample, in this process (no target, no
 * kernel): native_loc on addresses of the libz it links. "hit" is the
 * steady state (an address named before: the memo); "miss" a new address
 * each time (libdwfl's lookup); "first" the file opened and read once (the
 * very first also pays libdw's start, which loads its debuginfod client).
 * Then unwinding: stacks of this process captured as the kernel captures
 * them (ip, sp, bp and the stack's top bytes), inside libz (its allocator
 * callback) and inside libc (qsort's comparison), unwound again and again
 * by libdwfl (unwind.c, what --native uses) and by libunwind (natunwind.c).
 * Run: make build/natbench && build/natbench
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "aggregate/aggregate.h"
#include "core/clock.h"
#include "symbol/native.h"
#include "symbol/unwind.h"
#include "natunwind.h"

#define ROUNDS 5

/* ns per native_loc over n calls at base + i * step (step 0: the same address). */
static double per_call(struct natsym *ns, struct natproc *np, struct agg *a, uint64_t base,
		       uint64_t step, int n)
{
	uint64_t t0 = mono_ns();

	for (int i = 0; i < n; i++)
		native_loc(ns, np, base + (uint64_t)i * step, a);
	return (double)(mono_ns() - t0) / n;
}

/* ------------------------------------------------------------- unwinding */

#define STACK_COPY 8192
#define MAX_PCS 128

struct capture {
	uint64_t ip, sp, bp;
	uint8_t stack[STACK_COPY];
	size_t len;
};

static uint64_t stack_end;      /* the end of this thread's [stack] mapping */
static struct capture caps[2];
static int ncaps;

static uint64_t find_stack_end(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long lo, hi;
	char line[512];
	uint64_t end = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

/* This point's registers and the stack above them, as the BPF program takes them. */
static __attribute__((noinline)) void capture(struct capture *c)
{
	uint64_t ip, sp, bp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	c->len = stack_end - sp < STACK_COPY ? stack_end - sp : STACK_COPY;
	memcpy(c->stack, (const void *)(uintptr_t)sp, c->len);
	c->ip = ip, c->sp = sp, c->bp = bp;
}

/* libz's allocator callback: a stack main -> deflateInit2_ (libz) -> here. */
static void *zalloc_capture(void *opaque, unsigned items, unsigned size)
{
	(void)opaque;
	if (ncaps == 0)
		capture(&caps[ncaps++]);
	return calloc(items, size);
}

static void zfree_plain(void *opaque, void *p)
{
	(void)opaque;
	free(p);
}

/* qsort's comparison: main -> qsort (libc, its merge sort recursing) -> here. */
static int cmp_capture(const void *a, const void *b)
{
	if (ncaps == 1)
		capture(&caps[ncaps++]);
	return *(const int *)a - *(const int *)b;
}

static void take_stacks(void)
{
	z_stream z = { .zalloc = zalloc_capture, .zfree = zfree_plain };
	int v[64];

	stack_end = find_stack_end();
	if (deflateInit2(&z, 6, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) == Z_OK)
		deflateEnd(&z);
	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp_capture);
}

typedef int (*unwind_fn)(void *ctx, const struct ustack_in *in, uint64_t *pcs, size_t *n);

static int by_libdw(void *ctx, const struct ustack_in *in, uint64_t *pcs, size_t *n)
{
	bool cut;

	return unwind_stack(ctx, in, pcs, MAX_PCS, n, &cut);
}

static int by_libunwind(void *ctx, const struct ustack_in *in, uint64_t *pcs, size_t *n)
{
	bool cut;

	(void)ctx;
	return natunwind_stack(in, pcs, MAX_PCS, n, &cut);
}

/* Best of ROUNDS of rounds calls: ns per stack; pcs and *n what the last walk gave. */
static double time_unwind(unwind_fn fn, void *ctx, const struct ustack_in *in, int rounds, uint64_t *pcs,
			  size_t *n)
{
	double best = 1e18;

	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = mono_ns();

		for (int i = 0; i < rounds; i++)
			fn(ctx, in, pcs, n);
		best = (double)(mono_ns() - t0) / rounds < best ? (double)(mono_ns() - t0) / rounds : best;
	}
	return best;
}

static void bench_unwind(void)
{
	static const char *const where[2] = { "in libz (deflateInit2_ -> zalloc)", "in libc (qsort -> compare)" };
	struct unwinder *u = unwinder_new(getpid());
	uint64_t a[MAX_PCS], b[MAX_PCS], c[MAX_PCS], t0;
	size_t na = 0, nb = 0, nc = 0;

	take_stacks();
	if (!u || natunwind_init() != 0 || ncaps != 2) {
		printf("unwinding: not measured (%s)\n", !u ? "no libdw unwinder" : ncaps != 2 ? "no stack taken" :
		       "no libunwind address space");
		unwinder_free(u);
		return;
	}
	for (int i = 0; i < ncaps; i++) {
		struct ustack_in in = { getpid(), caps[i].ip, caps[i].sp, caps[i].bp, caps[i].stack, caps[i].len };
		double first_dw, first_uw, dw, uw, memo;

		t0 = mono_ns();
		by_libdw(u, &in, a, &na);
		first_dw = (double)(mono_ns() - t0) / 1e3;
		t0 = mono_ns();
		by_libunwind(NULL, &in, b, &nb);
		first_uw = (double)(mono_ns() - t0) / 1e3;
		/* libdw's own walk each time: the memo would give the same stack back from the second. */
		unwind_remember(u, false);
		dw = time_unwind(by_libdw, u, &in, 2000, a, &na);
		unwind_remember(u, true);
		memo = time_unwind(by_libdw, u, &in, 2000, c, &nc);
		uw = time_unwind(by_libunwind, NULL, &in, 2000, b, &nb);
		printf("unwind %s, %zu bytes of stack: libdw %zu frames, %.0f ns per stack (first %.1f us; "
		       "remembered: %.0f ns, same frames: %s); "
		       "libunwind %zu frames, %.0f ns per stack (first %.1f us); same frames: %s\n",
		       where[i], caps[i].len, na, dw, first_dw, memo,
		       na == nc && memcmp(a, c, na * sizeof(a[0])) == 0 ? "yes" : "no", nb, uw, first_uw,
		       na == nb && memcmp(a, b, na * sizeof(a[0])) == 0 ? "yes" : "no");
	}
	unwinder_free(u);
}

int main(void)
{
	struct natsym *ns = natsym_new();
	struct natproc np = { .pid = getpid() };
	struct agg *a = agg_new();
	uint64_t z = (uint64_t)(uintptr_t)deflate, t0 = mono_ns();
	double hit = 1e18, miss = 1e18;

	if (!ns || !a)
		return 1;
	native_loc(ns, &np, z, a);
	printf("first (maps read, file opened, symbols loaded, libdw's own start): %.1f us\n",
	       (double)(mono_ns() - t0) / 1e3);
	t0 = mono_ns();
	native_loc(ns, &np, (uint64_t)(uintptr_t)getpid, a);
	printf("first of a second library (libc): %.1f us\n", (double)(mono_ns() - t0) / 1e3);
	for (int r = 0; r < ROUNDS; r++) {
		double h = per_call(ns, &np, a, z, 0, 200000);
		/* New addresses after deflate's, 7 bytes apart, each round past the last. */
		double m = per_call(ns, &np, a, z + (uint64_t)r * 2000 * 7, 7, 2000);

		hit = h < hit ? h : hit;
		miss = m < miss ? m : miss;
	}
	printf("hit (steady state, best of %d): %.0f ns per sample\n", ROUNDS, hit);
	printf("miss (a new address, best of %d): %.0f ns per sample\n", ROUNDS, miss);
	natproc_free(&np);
	agg_free(a);
	natsym_free(ns);
	bench_unwind();
	return 0;
}
