/* SPDX-License-Identifier: MIT */
/* Sample times beside the aggregate's counts; see timeline.h. */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "aggregate/timeline.h"

void timeline_init(struct timeline *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
}

static bool grow(struct timeline *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 4096;
	uint32_t *s;
	uint64_t *ns;

	if (ncap > t->max)
		ncap = t->max;
	if (ncap <= t->cap)
		return false;
	if (!(s = realloc(t->stack, ncap * sizeof(*s))))
		return false;
	t->stack = s;
	if (!(ns = realloc(t->ns, ncap * sizeof(*ns))))
		return false;
	t->ns = ns;
	t->cap = ncap;
	return true;
}

void timeline_add(struct timeline *t, int64_t stack, uint64_t ns)
{
	if (stack < 0 || t->full)
		return;
	if (t->n == t->cap && !grow(t)) {
		t->full = true;
		return;
	}
	t->stack[t->n] = (uint32_t)stack;
	t->ns[t->n++] = ns;
}

void timeline_reset(struct timeline *t)
{
	t->n = 0;
	t->full = false;
}

void timeline_free(struct timeline *t)
{
	free(t->stack);
	free(t->ns);
	timeline_init(t, t->max);
}
