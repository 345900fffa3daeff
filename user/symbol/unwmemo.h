/* SPDX-License-Identifier: MIT */
/*
 * --native: libdwfl's walks remembered (unwind.c). A walk from a frame on
 * is a function of that frame's state (its pc, the registers libdwfl
 * knows in it and whether it is the sample's first frame), the memory the
 * walk reads and the process's modules: nothing else reaches libdwfl (our
 * callbacks give it one thread, its registers, and memory). So an entry
 * keeps a frame's state, the words the walk read after it (address,
 * value, or that the read failed) in the order read, and the return
 * addresses it gave. A later sample whose frame has the same state and
 * whose memory holds the same word at every one of those addresses would
 * make libdwfl read the same addresses in the same order (each address is
 * computed from the state and the words read before it) and give the same
 * frames: that is a hit, and its answer is exactly libdwfl's. Any word
 * that differs is a miss. The modules are the third input: the owner
 * empties the memo whenever it makes its Dwfl again (unwmemo_clear).
 * A key hashes to a set of UNWMEMO_WAYS entries, which holds walks of
 * several keys and several walks of one key with different words (a saved
 * register cycling through a few values): a lookup checks each of the
 * key's, a put into a full set replaces the next in turn. An entry only
 * ever answers for its own key and words.
 */
#ifndef PBP_SYMBOL_UNWMEMO_H
#define PBP_SYMBOL_UNWMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Per process, whole-host runs included: UNWMEMO_SLOTS entries of a
 * walk's frames and reads each, about 2 MiB for walks of 80 reads (12 MiB
 * at most). As many hits as 4,096 slots had on a steady target: its
 * callers' states are few.
 */
#define UNWMEMO_SLOTS 1024
#define UNWMEMO_WAYS 16         /* 4: 73 % of a zlib target's stacks from the memo, 8: 77 %, 16: 82 % */
#define UNWMEMO_REGS 17         /* x86-64's DWARF registers 0-16: what a Dwfl_Frame holds */
#define UNWMEMO_MAX_READS 512   /* a walk that read more is not kept */
/*
 * All memos of a run together: -a --native remembers walks for every busy
 * process, up to 12 MiB each, and a host of them must not make that
 * gigabytes. Past it a walk is not kept (libdwfl walks it again).
 */
#define UNWMEMO_BUDGET (64u << 20)

/* A frame's state as libdwfl holds it; made with unwmemo_key_init (padding zeroed: compared whole). */
struct unwmemo_key {
	uint64_t pc;
	uint64_t regs[UNWMEMO_REGS];
	uint32_t known;         /* bit r: regs[r] is known to libdwfl (an unknown one is 0) */
	uint16_t depth;         /* the frame's index in the walk (0: the sample's registers) */
	uint16_t max;           /* the walk's frame limit */
};

struct unwmemo_read {
	uint64_t addr, val;     /* val 0 when the read failed */
	uint64_t ok;            /* 1: read; 0: failed (a word, so that the struct has no padding) */
};

struct unwmemo_entry {
	struct unwmemo_key key;
	bool cut;               /* the walk stopped at max */
	uint32_t npcs, nreads;
	size_t bytes;           /* its block's size, counted against UNWMEMO_BUDGET */
	uint64_t *pcs;          /* the frames after the key's, as unwind_stack gives them */
	struct unwmemo_read *reads;
};

struct unwmemo {
	struct unwmemo_entry *slot[UNWMEMO_SLOTS];
	/*
	 * slot[i]'s key hashed whole: a lookup compares a set's tags before
	 * any key, so that the ways of other keys are not read (each is a
	 * block of its own, a cache miss). Equal keys have equal tags: the
	 * key is still compared on a match, and answers as before.
	 */
	uint64_t tag[UNWMEMO_SLOTS];
	uint64_t hits, misses, stale;   /* stale: the key was there, a word differed */
	uint64_t over_budget;   /* walks not kept: every memo together held UNWMEMO_BUDGET */
	unsigned turn;                  /* the way the next put into a full set replaces */
};

/*
 * What the owner's memory holds at addr now, as its memory_read would
 * give it to libdwfl: true and *val, or false when it cannot be read.
 */
typedef bool (*unwmemo_read_fn)(void *ctx, uint64_t addr, uint64_t *val);

void unwmemo_key_init(struct unwmemo_key *k, uint64_t pc, uint16_t depth, uint16_t max);
void unwmemo_key_reg(struct unwmemo_key *k, unsigned reg, uint64_t val);
/* The entry for k if every word it read still reads the same through rd, else NULL. */
const struct unwmemo_entry *unwmemo_get(struct unwmemo *m, const struct unwmemo_key *k,
					unwmemo_read_fn rd, void *ctx);
/* Keeps a walk: the frames after k's, and the reads it made. 0 or -PBP_E_NOMEM. */
int unwmemo_put(struct unwmemo *m, const struct unwmemo_key *k, const uint64_t *pcs,
		uint32_t npcs, bool cut, const struct unwmemo_read *reads, uint32_t nreads);
/* Forgets every walk: the modules they were computed with are gone. */
void unwmemo_clear(struct unwmemo *m);
/* What every memo's entries hold now, in bytes (at most about UNWMEMO_BUDGET). */
size_t unwmemo_bytes(void);

#endif /* PBP_SYMBOL_UNWMEMO_H */
