/* SPDX-License-Identifier: MIT */
/*
 * --native: a thread's native stack at a sample, unwound from .eh_frame by
 * elfutils' libdwfl out of the registers and the top of the stack the
 * kernel copied (memory past the copy is read from the process now).
 */
#ifndef PBP_SYMBOL_UNWIND_H
#define PBP_SYMBOL_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct unwinder;

/* One process's unwinder: its modules at their addresses, read when first needed. */
struct unwinder *unwinder_new(pid_t pid);
void unwinder_free(struct unwinder *u);

/* What the kernel took of one thread at one sample. */
struct ustack_in {
	pid_t tid;
	uint64_t ip, sp, bp;
	const uint8_t *stack;   /* the bytes at sp.. */
	size_t len;
};

/*
 * Return addresses, innermost first (pcs[0] is ip; the others are call
 * sites, one byte into the call), at most max: *cut when the walk had more.
 * 0 with *n >= 1 whatever stopped the walk (a frame without CFI, memory
 * not readable); -PBP_E_NOMEM, or -PBP_E_FAULT when nothing could be known.
 */
int unwind_stack(struct unwinder *u, const struct ustack_in *in, uint64_t *pcs, size_t max,
		 size_t *n, bool *cut);

/* Walks taken (wholly, or from the second frame on) from the memo so far (unwmemo.h). */
uint64_t unwind_remembered(const struct unwinder *u);
/* On (the default): walks are remembered and looked up. Off: libdwfl walks every stack. */
void unwind_remember(struct unwinder *u, bool on);

/*
 * The code pc's function spans, [start, end), in the process's addresses,
 * from its file's .eh_frame_hdr table (the next function's start ends it):
 * what a stripped file still tells of a function with no symbol (its
 * bounds, not its name). false when no module or no FDE
 * covers pc. Only after an unwind_stack of the same process.
 */
bool unwind_func_span(struct unwinder *u, uint64_t pc, uint64_t *start, uint64_t *end);

#endif /* PBP_SYMBOL_UNWIND_H */
