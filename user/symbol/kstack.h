/* SPDX-License-Identifier: MIT */
/*
 * --kernel: a sample's kernel stack (by its id in the kernel's stack map)
 * as the innermost frames of its stack, "[kernel] do_select", named from
 * /proc/kallsyms.
 */
#ifndef PBP_SYMBOL_KSTACK_H
#define PBP_SYMBOL_KSTACK_H

#include <stdbool.h>
#include <stdint.h>

#include "pybpfprof.h"

#define KERNEL_PREFIX "[kernel] "
#define KERNEL_UNKNOWN KERNEL_PREFIX "[unknown]"
#define KALLSYMS_PATH "/proc/kallsyms"

struct agg;
struct kstacks;

struct kstack_stats {
	uint64_t symbols;       /* kallsyms' text symbols with an address (0: names unknown) */
	uint64_t stacks;        /* samples given kernel frames */
	uint64_t frames;        /* kernel frames in them */
	uint64_t missed;        /* no stack under the sample's id (the kernel's, or the map's, failure) */
	uint64_t unnamed;       /* frames no symbol names: [kernel] [unknown] */
	uint64_t ns;            /* time spent */
};

/* The frames of the stack kept under id, innermost first; their count (0: none). */
typedef uint32_t (*kstack_read_fn)(void *ctx, int32_t id, uint64_t *ips);

/*
 * Names from path, read now (once). A kallsyms that cannot be read, or
 * that hides its addresses (kptr_restrict), is said once on stderr and
 * every frame is then [kernel] [unknown]. NULL only when out of memory.
 */
struct kstacks *kstacks_new(const char *path);
void kstacks_free(struct kstacks *k);
const struct kstack_stats *kstacks_stats(const struct kstacks *k);

/*
 * s carries PBP_F_KSTACK: its kernel frames appended to locs[0..*n) (root
 * first, so outermost first), at most max in all. A stack that cannot be
 * had is one frame, [kernel] [unknown]. 0 or -PBP_E_NOMEM.
 */
int kernel_frames(struct kstacks *k, const struct pbp_sample *s, kstack_read_fn read, void *ctx,
		  struct agg *a, uint32_t *locs, uint32_t *n, uint32_t max);

#endif /* PBP_SYMBOL_KSTACK_H */
