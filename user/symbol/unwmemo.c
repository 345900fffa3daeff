/* SPDX-License-Identifier: MIT */
/* libdwfl's walks remembered by the state they started from (unwmemo.h). */
#include <stdlib.h>
#include <string.h>

#include "symbol/unwmemo.h"
#include "core/errors.h"

/* The bytes every memo's entries hold (the HTTP thread of the agent unwinds nothing, but cheaply safe). */
static _Atomic size_t memo_bytes;

static void entry_free(struct unwmemo_entry *e)
{
	if (e)
		memo_bytes -= e->bytes;
	free(e);
}

size_t unwmemo_bytes(void)
{
	return memo_bytes;
}

void unwmemo_key_init(struct unwmemo_key *k, uint64_t pc, uint16_t depth, uint16_t max)
{
	memset(k, 0, sizeof(*k));
	k->pc = pc;
	k->depth = depth;
	k->max = max;
}

void unwmemo_key_reg(struct unwmemo_key *k, unsigned reg, uint64_t val)
{
	if (reg >= UNWMEMO_REGS)
		return;
	k->regs[reg] = val;
	k->known |= 1u << reg;
}

/* The first of the UNWMEMO_WAYS slots a key may be kept in. */
static size_t set_of(const struct unwmemo_key *k)
{
	/* pc and sp tell most walks apart; the rest of the key is in its tag. */
	uint64_t h = k->pc * 0x9E3779B97F4A7C15ull ^ k->regs[7] * 0xC2B2AE3D27D4EB4Full ^ k->depth;

	return ((h ^ h >> 29) & (UNWMEMO_SLOTS / UNWMEMO_WAYS - 1)) * UNWMEMO_WAYS;
}

/* The whole key hashed (its padding is zeroed: unwmemo_key_init). */
static uint64_t tag_of(const struct unwmemo_key *k)
{
	uint64_t w[sizeof(*k) / sizeof(uint64_t)], h = 0x84222325CBF29CE4ull;

	_Static_assert(sizeof(*k) % sizeof(uint64_t) == 0, "a key is whole words");
	memcpy(w, k, sizeof(w));
	for (size_t i = 0; i < sizeof(w) / sizeof(*w); i++)
		h = (h ^ w[i]) * 0x100000001B3ull + (h >> 31);
	return h;
}

/* Every word as the walk read it, in its order: the walk again would read just these. */
static bool reads_same(const struct unwmemo_entry *e, unwmemo_read_fn rd, void *ctx)
{
	for (uint32_t i = 0; i < e->nreads; i++) {
		const struct unwmemo_read *r = &e->reads[i];
		uint64_t val = 0;
		bool ok = rd(ctx, r->addr, &val);

		if (ok != (r->ok != 0) || (ok && val != r->val))
			return false;
	}
	return true;
}

const struct unwmemo_entry *unwmemo_get(struct unwmemo *m, const struct unwmemo_key *k,
					unwmemo_read_fn rd, void *ctx)
{
	size_t at = set_of(k);
	struct unwmemo_entry **set = &m->slot[at];
	const uint64_t *tags = &m->tag[at];
	uint64_t tag = tag_of(k);
	bool seen = false;

	for (int w = 0; w < UNWMEMO_WAYS; w++) {
		const struct unwmemo_entry *e = set[w];

		if (!e || tags[w] != tag || memcmp(&e->key, k, sizeof(*k)) != 0)
			continue;
		seen = true;
		if (reads_same(e, rd, ctx)) {
			m->hits++;
			return e;
		}
	}
	m->stale += seen;
	m->misses++;
	return NULL;
}

int unwmemo_put(struct unwmemo *m, const struct unwmemo_key *k, const uint64_t *pcs,
		uint32_t npcs, bool cut, const struct unwmemo_read *reads, uint32_t nreads)
{
	size_t at = set_of(k);
	struct unwmemo_entry **set = &m->slot[at], **slot = NULL, *e;
	size_t pcs_at = sizeof(*e), reads_at = pcs_at + npcs * sizeof(*pcs);
	size_t bytes = reads_at + nreads * sizeof(*reads);

	if (nreads > UNWMEMO_MAX_READS)
		return 0;
	/* An empty way, else the next in turn: the set keeps the walks seen last. */
	for (int w = 0; w < UNWMEMO_WAYS && !slot; w++)
		if (!set[w])
			slot = &set[w];
	if (!slot)
		slot = &set[m->turn++ % UNWMEMO_WAYS];
	if (memo_bytes - (*slot ? (*slot)->bytes : 0) + bytes > UNWMEMO_BUDGET) {
		m->over_budget++;
		return 0;
	}
	/* One block: an entry is made and freed whole. */
	e = malloc(bytes);
	if (!e)
		return -PBP_E_NOMEM;
	e->bytes = bytes;
	memo_bytes += bytes;
	e->key = *k;
	e->cut = cut;
	e->npcs = npcs;
	e->nreads = nreads;
	e->pcs = (uint64_t *)((char *)e + pcs_at);
	e->reads = (struct unwmemo_read *)((char *)e + reads_at);
	if (npcs)
		memcpy(e->pcs, pcs, npcs * sizeof(*pcs));
	if (nreads)
		memcpy(e->reads, reads, nreads * sizeof(*reads));
	entry_free(*slot);
	*slot = e;
	m->tag[slot - m->slot] = tag_of(k);
	return 0;
}

void unwmemo_clear(struct unwmemo *m)
{
	for (size_t i = 0; i < UNWMEMO_SLOTS; i++) {
		entry_free(m->slot[i]);
		m->slot[i] = NULL;
	}
}
