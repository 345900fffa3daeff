/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "core/search.h"

size_t search_first(const void *base, size_t n, size_t size, const void *key,
		    bool (*before)(const void *elem, const void *key))
{
	size_t lo = 0, hi = n;

	/* before holds below lo and fails from hi on; mid never overflows */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (before((const uint8_t *)base + mid * size, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
