/* SPDX-License-Identifier: MIT */
/*
 * --native's remembered walks (user/symbol/unwmemo.c): a walk is given
 * again only for the same frame state and only while every word it read
 * reads the same (a different stack at the same pc, a read that failed
 * and now succeeds, another register: misses); two walks of one key
 * each answer for their own words; keys of one set that differ in one
 * register each find their own; clearing forgets all; keys in a full
 * set replace each other, never answer for each other.
 */
#include <stdint.h>
#include <stdlib.h>

#include "unit.h"
#include "symbol/unwmemo.h"

/* A fake memory: words at 0x1000.. as mem[], unreadable past it. */
static uint64_t mem[8];

static bool rd(void *ctx, uint64_t addr, uint64_t *val)
{
	(void)ctx;
	if (addr < 0x1000 || addr >= 0x1000 + sizeof(mem) || addr % 8)
		return false;
	*val = mem[(addr - 0x1000) / 8];
	return true;
}

static void key(struct unwmemo_key *k, uint64_t pc, uint64_t sp, uint16_t depth)
{
	unwmemo_key_init(k, pc, depth, 128);
	unwmemo_key_reg(k, 6, 0x2000);
	unwmemo_key_reg(k, 7, sp);
}

/*
 * Every memo of a run together stays within UNWMEMO_BUDGET: eight
 * processes' memos filled with the longest walks kept (12 KiB each) would
 * hold 96 MiB; past the budget a walk is not kept, and clearing gives all
 * the bytes back.
 */
static void check_budget(void)
{
	static struct unwmemo_read big[UNWMEMO_MAX_READS];
	struct unwmemo *v[8];
	struct unwmemo_key k;
	uint64_t pcs[1] = { 0x401000 }, over = 0;
	size_t one = sizeof(struct unwmemo_entry) + sizeof(pcs) + sizeof(big);

	CHECK(unwmemo_bytes() == 0);
	for (int i = 0; i < 8; i++) {
		CHECK((v[i] = calloc(1, sizeof(*v[i]))) != NULL);
		for (uint64_t pc = 0; pc < 2 * UNWMEMO_SLOTS; pc++) {
			key(&k, 0x500000 + pc, 0x7000 + (uint64_t)i * 0x100000, 0);
			CHECK_EQ_INT(unwmemo_put(v[i], &k, pcs, 1, false, big, UNWMEMO_MAX_READS), 0);
			CHECK(unwmemo_bytes() <= UNWMEMO_BUDGET);
		}
		over += v[i]->over_budget;
	}
	CHECK(over > 0 && unwmemo_bytes() > UNWMEMO_BUDGET - one);
	for (int i = 0; i < 8; i++) {
		unwmemo_clear(v[i]);
		free(v[i]);
	}
	CHECK(unwmemo_bytes() == 0);
}

int main(void)
{
	struct unwmemo *m = calloc(1, sizeof(*m));
	struct unwmemo_key k, k2;
	struct unwmemo_read reads[3] = {
		{ 0x1008, 0x401234, 1 }, { 0x1010, 0x2040, 1 }, { 0x1040, 0, 0 },
	};
	const uint64_t pcs[2] = { 0x401233, 0x401100 };
	const struct unwmemo_entry *e;
	uint64_t other = 0;

	CHECK(m);
	mem[1] = 0x401234, mem[2] = 0x2040;
	key(&k, 0x401000, 0x1000, 0);
	CHECK(unwmemo_get(m, &k, rd, NULL) == NULL);
	CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, false, reads, 3), 0);
	e = unwmemo_get(m, &k, rd, NULL);
	CHECK(e && e->npcs == 2 && e->pcs[0] == 0x401233 && e->pcs[1] == 0x401100 && !e->cut);
	CHECK(m->hits == 1);
	/* The same pc and registers, another return address on the stack: not the same walk. */
	mem[1] = 0x405678;
	CHECK(unwmemo_get(m, &k, rd, NULL) == NULL);
	CHECK(m->stale == 1);
	mem[1] = 0x401234;
	CHECK(unwmemo_get(m, &k, rd, NULL) != NULL);
	/* A word read where none was readable walks on differently. */
	reads[2] = (struct unwmemo_read){ 0x1018, 0, 0 };
	unwmemo_clear(m);
	CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, false, reads, 3), 0);
	CHECK(unwmemo_get(m, &k, rd, NULL) == NULL);
	/* Another register, another depth, another limit: other keys. */
	key(&k2, 0x401000, 0x1000, 0);
	unwmemo_key_reg(&k2, 3, 0);     /* rbx known, even as 0 */
	unwmemo_clear(m);
	CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, true, reads, 2), 0);
	CHECK(unwmemo_get(m, &k2, rd, NULL) == NULL);
	key(&k2, 0x401000, 0x1000, 1);
	CHECK(unwmemo_get(m, &k2, rd, NULL) == NULL);
	unwmemo_key_init(&k2, 0x401000, 0, 127);
	unwmemo_key_reg(&k2, 6, 0x2000);
	unwmemo_key_reg(&k2, 7, 0x1000);
	CHECK(unwmemo_get(m, &k2, rd, NULL) == NULL);
	e = unwmemo_get(m, &k, rd, NULL);
	CHECK(e && e->cut);
	/* One key, two walks with different words: each answers for its own words only. */
	{
		const uint64_t other_pcs[1] = { 0x402000 };
		struct unwmemo_read other_reads[1] = { { 0x1008, 0x405678, 1 } };

		unwmemo_clear(m);
		CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, false, reads, 2), 0);
		CHECK_EQ_INT(unwmemo_put(m, &k, other_pcs, 1, false, other_reads, 1), 0);
		mem[1] = 0x405678;
		e = unwmemo_get(m, &k, rd, NULL);
		CHECK(e && e->npcs == 1 && e->pcs[0] == 0x402000);
		mem[1] = 0x401234;
		e = unwmemo_get(m, &k, rd, NULL);
		CHECK(e && e->npcs == 2 && e->pcs[0] == 0x401233);
		mem[1] = 0x409999;
		CHECK(unwmemo_get(m, &k, rd, NULL) == NULL);
		mem[1] = 0x401234;
	}
	/*
	 * Keys of one set (pc, sp and depth alike) told apart by another
	 * register only: the set's tags filter, each key finds its own walk.
	 */
	unwmemo_clear(m);
	for (uint64_t i = 0; i < UNWMEMO_WAYS; i++) {
		const uint64_t own[1] = { 0x403000 + i };

		key(&k2, 0x401000, 0x1000, 1);
		unwmemo_key_reg(&k2, 3, i);
		CHECK_EQ_INT(unwmemo_put(m, &k2, own, 1, false, reads, 2), 0);
	}
	for (uint64_t i = 0; i < UNWMEMO_WAYS; i++) {
		key(&k2, 0x401000, 0x1000, 1);
		unwmemo_key_reg(&k2, 3, i);
		e = unwmemo_get(m, &k2, rd, NULL);
		CHECK(e && e->npcs == 1 && e->pcs[0] == 0x403000 + i && e->key.regs[3] == i);
	}
	key(&k2, 0x401000, 0x1000, 1);
	unwmemo_key_reg(&k2, 3, UNWMEMO_WAYS);
	CHECK(unwmemo_get(m, &k2, rd, NULL) == NULL);
	/* Forgotten when the modules it was computed with are. */
	unwmemo_clear(m);
	CHECK(unwmemo_get(m, &k, rd, NULL) == NULL);
	/* Keys in k's set: once it is full, one replaces k. */
	CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, false, reads, 2), 0);
	for (uint64_t pc = 0x401001; pc < 0x401000 + 1000000 && !other; pc++) {
		key(&k2, pc, 0x1000, 0);
		CHECK_EQ_INT(unwmemo_put(m, &k2, pcs, 1, false, reads, 0), 0);
		if (unwmemo_get(m, &k, rd, NULL) == NULL)
			other = pc;
	}
	CHECK(other != 0);
	key(&k2, other, 0x1000, 0);
	e = unwmemo_get(m, &k2, rd, NULL);
	CHECK(e && e->key.pc == other && e->npcs == 1);
	/* More reads than kept: not remembered, not an error. */
	unwmemo_clear(m);
	CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, false, reads, UNWMEMO_MAX_READS + 1), 0);
	CHECK(unwmemo_get(m, &k, rd, NULL) == NULL);
	CHECK_EQ_INT(unwmemo_put(m, &k, pcs, 2, false, reads, 2), 0);
	CHECK(unwmemo_get(m, &k, rd, NULL) != NULL);
	unwmemo_clear(m);
	free(m);
	check_budget();
	return unit_done("unwmemo");
}
