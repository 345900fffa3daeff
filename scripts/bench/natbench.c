/* SPDX-License-Identifier: MIT */
/*
 * The native leaf's cost per sample, in this process (no target, no
 * kernel): native_loc on addresses of the libz it links. "hit" is the
 * steady state (an address named before: the memo); "miss" a new address
 * each time (libdwfl's lookup); "first" the file opened and read once (the
 * very first also pays libdw's start, which loads its debuginfod client).
 * Run: make build/natbench && build/natbench
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <zlib.h>

#include "aggregate/aggregate.h"
#include "core/clock.h"
#include "symbol/native.h"

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
	return 0;
}
