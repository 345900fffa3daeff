/* SPDX-License-Identifier: MIT */
/*
 * The one binary search over sorted arrays: where a key falls among them.
 */
#ifndef PBP_CORE_SEARCH_H
#define PBP_CORE_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The index of the first of the n elements of size bytes at base for which
 * before(elem, key) is false; n when it holds for all. The array must be
 * partitioned by it: every element it holds for comes first (a sorted
 * array and "elem < key" gives the lower bound, "elem <= key" the upper
 * bound, so the last element at or before key is the one before it).
 */
size_t search_first(const void *base, size_t n, size_t size, const void *key,
		    bool (*before)(const void *elem, const void *key));

#endif /* PBP_CORE_SEARCH_H */
