// SPDX-License-Identifier: MIT
/* user/core/search.c: lower and upper bounds, at the edges. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/search.h"
#include "unit.h"

/* Elements wider than the key, as the callers' are: the key is one field. */
struct item {
	uint64_t at;
	char pad[12];
};

static bool below(const void *elem, const void *key)
{
	return ((const struct item *)elem)->at < *(const uint64_t *)key;
}

static bool at_or_below(const void *elem, const void *key)
{
	return ((const struct item *)elem)->at <= *(const uint64_t *)key;
}

static size_t lower(const struct item *v, size_t n, uint64_t key)
{
	return search_first(v, n, sizeof(*v), &key, below);
}

static size_t upper(const struct item *v, size_t n, uint64_t key)
{
	return search_first(v, n, sizeof(*v), &key, at_or_below);
}

static void test_edges(void)
{
	struct item v[] = { { 10, "" }, { 20, "" }, { 20, "" }, { 20, "" }, { 30, "" } };

	/* empty: nothing is read (NULL would crash if it were) */
	CHECK_EQ_INT(lower(NULL, 0, 5), 0);
	CHECK_EQ_INT(upper(NULL, 0, 5), 0);
	/* every element above the key, every one below it */
	CHECK_EQ_INT(lower(v, 5, 0), 0);
	CHECK_EQ_INT(upper(v, 5, 9), 0);
	CHECK_EQ_INT(lower(v, 5, 31), 5);
	CHECK_EQ_INT(upper(v, 5, UINT64_MAX), 5);
	/* duplicates: lower is the first of them, upper one past the last */
	CHECK_EQ_INT(lower(v, 5, 20), 1);
	CHECK_EQ_INT(upper(v, 5, 20), 4);
	/* a key between elements: both bounds the same */
	CHECK_EQ_INT(lower(v, 5, 25), 4);
	CHECK_EQ_INT(upper(v, 5, 25), 4);
	/* first and last elements equal to the key */
	CHECK_EQ_INT(lower(v, 5, 10), 0);
	CHECK_EQ_INT(upper(v, 5, 10), 1);
	CHECK_EQ_INT(lower(v, 5, 30), 4);
	CHECK_EQ_INT(upper(v, 5, 30), 5);
	/* one element */
	CHECK_EQ_INT(lower(v, 1, 10), 0);
	CHECK_EQ_INT(upper(v, 1, 10), 1);
	/* all equal */
	struct item same[4] = { { 7, "" }, { 7, "" }, { 7, "" }, { 7, "" } };
	CHECK_EQ_INT(lower(same, 4, 7), 0);
	CHECK_EQ_INT(upper(same, 4, 7), 4);
}

/* Against a linear scan, on random sorted arrays with many duplicates. */
static void test_random(void)
{
	uint64_t s = 0x2545f4914f6cdd1dull;
	struct item v[64];
	long bad = 0;

	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)round % 65;

		for (size_t i = 0; i < n; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			v[i].at = (i ? v[i - 1].at : 0) + (s >> 62);      /* steps of 0-3 */
		}
		for (uint64_t key = 0; key < 2 * n + 3; key++) {
			size_t lo = 0, up = 0;

			while (lo < n && v[lo].at < key)
				lo++;
			while (up < n && v[up].at <= key)
				up++;
			bad += lower(v, n, key) != lo || upper(v, n, key) != up;
		}
	}
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	test_edges();
	test_random();
	return unit_done("search");
}
