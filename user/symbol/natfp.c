/* SPDX-License-Identifier: MIT */
/* The kernel's frame-pointer walk as a native frame list (natfp.h). */
#include <string.h>

#include "symbol/natfp.h"

void natfp_pcs(const struct pbp_ustack *u, uint64_t ip, uint64_t *pcs, size_t max, size_t *n,
	       bool *cut)
{
	size_t have = u->len / sizeof(uint64_t), i;

	*n = 0;
	*cut = false;
	if (!max)
		return;
	/* The record holds PBP_UADDRS_MAX at most, whatever .len says. */
	if (have > PBP_UADDRS_MAX)
		have = PBP_UADDRS_MAX;
	*cut = have == PBP_UADDRS_MAX || have > max;
	if (have > max)
		have = max;
	for (i = 0; i < have; i++) {
		uint64_t a;

		memcpy(&a, u->data + i * sizeof(a), sizeof(a));
		if (a == 0) {   /* the end of a chain: what follows is not a frame */
			*cut = false;
			break;
		}
		pcs[i] = i == 0 ? a : a - 1;
	}
	*n = i;
	if (*n == 0)            /* not even ip: it is the innermost frame, whatever the walk said */
		pcs[(*n)++] = ip;
}
