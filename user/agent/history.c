/* SPDX-License-Identifier: MIT */
/*
 * Slices kept in a ring, oldest first. A slice is what the loop's
 * aggregate counted in one second, taken over with no copy (agg_take): a pull of "the last N seconds" and a push of
 * "this service's interval" are both merges of the slices they cover, so
 * the loop never stops and nothing is sampled twice for two consumers.
 * Memory: a slice holds only what its second had; the oldest go first
 * when the budget is reached, and that is counted.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/history.h"
#include "core/errors.h"

struct slice {
	struct agg *agg;
	uint64_t start_ns, end_ns;
	size_t bytes;
};

struct history {
	pthread_mutex_t lock;
	struct slice *ring;
	uint32_t cap, head, n;  /* ring[head] is the oldest */
	uint64_t keep_ns;
	size_t max_bytes, bytes;
	uint64_t dropped;
};

/* One slice a second for keep_ns, and a few more for slices that came late. */
struct history *history_new(uint64_t keep_ns, size_t max_bytes)
{
	struct history *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->cap = (uint32_t)(keep_ns / 1000000000ull) + 8;
	h->ring = calloc(h->cap, sizeof(*h->ring));
	if (!h->ring) {
		free(h);
		return NULL;
	}
	h->keep_ns = keep_ns;
	h->max_bytes = max_bytes;
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

static struct slice *nth(struct history *h, uint32_t i)
{
	return &h->ring[(h->head + i) % h->cap];
}

static void drop_oldest(struct history *h)
{
	struct slice *s = nth(h, 0);

	h->bytes -= s->bytes;
	agg_free(s->agg);
	memset(s, 0, sizeof(*s));
	h->head = (h->head + 1) % h->cap;
	h->n--;
}

void history_free(struct history *h)
{
	if (!h)
		return;
	while (h->n)
		drop_oldest(h);
	pthread_mutex_destroy(&h->lock);
	free(h->ring);
	free(h);
}

/* Too old, too many, or over budget (the newest always stays). */
static void trim(struct history *h, uint64_t now_ns)
{
	while (h->n && (nth(h, 0)->end_ns + h->keep_ns < now_ns || h->n == h->cap))
		drop_oldest(h);
	while (h->n > 1 && h->bytes > h->max_bytes) {
		drop_oldest(h);
		h->dropped++;
	}
}

/*
 * A taken slice shares the loop's locations: each counts them whole, an
 * overcount (they are held once), which errs on the budget's safe side.
 */
static void put(struct history *h, struct slice s)
{
	s.bytes = agg_bytes(s.agg);
	pthread_mutex_lock(&h->lock);
	trim(h, s.end_ns);
	if (h->n == h->cap)
		drop_oldest(h);
	*nth(h, h->n++) = s;
	h->bytes += s.bytes;
	trim(h, s.end_ns);
	pthread_mutex_unlock(&h->lock);
}

int history_add(struct history *h, const struct agg *a, uint64_t start_ns, uint64_t end_ns)
{
	struct slice s = { agg_new(), start_ns, end_ns, 0 };
	int err = s.agg ? agg_merge(s.agg, a, NULL, NULL) : -PBP_E_NOMEM;

	if (err) {
		agg_free(s.agg);
		return err;
	}
	put(h, s);
	return 0;
}

int history_take(struct history *h, struct agg *a, uint64_t start_ns, uint64_t end_ns)
{
	struct slice s = { agg_take(a), start_ns, end_ns, 0 };

	if (!s.agg)
		return -PBP_E_NOMEM;
	put(h, s);
	return 0;
}

static bool covered(const struct slice *s, uint64_t since, uint64_t until)
{
	return s->end_ns > since && s->end_ns <= until;
}

int history_merge(struct history *h, struct agg *dst, uint64_t since, uint64_t until, agg_keep_fn keep,
		  void *ctx, struct span *got)
{
	int err = 0;

	*got = (struct span){ 0, 0 };
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n && !err; i++) {
		struct slice *s = nth(h, i);

		if (!covered(s, since, until))
			continue;
		err = agg_merge(dst, s->agg, keep, ctx);
		if (!got->start_ns)
			got->start_ns = s->start_ns;
		got->end_ns = s->end_ns;
	}
	pthread_mutex_unlock(&h->lock);
	return err;
}

/* Service names already seen (own copies), so that each is given once. */
struct seen {
	char **names;
	uint32_t n, cap;
};

/* 0: added, 1: seen before, or -PBP_E_NOMEM. */
static int see(struct seen *s, const char *name)
{
	char **p;

	for (uint32_t i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return 1;
	if (s->n == s->cap) {
		p = realloc(s->names, (s->cap ? s->cap * 2 : 16) * sizeof(*p));
		if (!p)
			return -PBP_E_NOMEM;
		s->names = p;
		s->cap = s->cap ? s->cap * 2 : 16;
	}
	s->names[s->n] = strdup(name);
	return s->names[s->n++] ? 0 : -PBP_E_NOMEM;
}

/* The services of a slice's stacks. */
static int slice_services(const struct agg *a, struct seen *seen)
{
	int err = 0;

	for (uint32_t i = 0; i < agg_nstacks(a) && err >= 0; i++) {
		uint32_t pid;
		const struct proc_meta *m = agg_stack_process(a, i, &pid);

		if (m && m->label[PL_SERVICE][0])
			err = see(seen, m->label[PL_SERVICE]);
	}
	return err < 0 ? err : 0;
}

/* Names are collected under the lock and given after it: fn may merge. */
int history_services(struct history *h, uint64_t since, uint64_t until,
		     int (*fn)(const char *service, void *ctx), void *ctx)
{
	struct seen seen = { 0 };
	int err = 0;

	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n && !err; i++)
		if (covered(nth(h, i), since, until))
			err = slice_services(nth(h, i)->agg, &seen);
	pthread_mutex_unlock(&h->lock);
	for (uint32_t i = 0; i < seen.n; i++) {
		if (!err)
			err = fn(seen.names[i], ctx);
		free(seen.names[i]);
	}
	free(seen.names);
	return err;
}

void history_stats(struct history *h, struct history_stats *st)
{
	pthread_mutex_lock(&h->lock);
	*st = (struct history_stats){ h->bytes, h->n, h->dropped };
	pthread_mutex_unlock(&h->lock);
}
