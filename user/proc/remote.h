/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_REMOTE_H
#define PBP_PROC_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct remote_stats {
	uint64_t hits, misses;      /* page cache */
	uint64_t reads;             /* process_vm_readv calls */
	uint64_t bytes;             /* bytes those calls returned */
	uint64_t faults;            /* reads of unmapped memory */
	uint64_t evictions;
};

struct remote;

/* pages: page-cache capacity in 4 KiB pages (0 disables the cache). */
struct remote *remote_open(pid_t pid, unsigned pages);
void remote_close(struct remote *r);
/* Read len bytes now, bypassing the cache (mutable data: frames, threads). */
int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len);
/* Read through the page cache (immutable data: code objects, strings). */
int remote_read_cached(struct remote *r, uint64_t addr, void *buf, size_t len);
/*
 * Until turned off, remote_read goes through the page cache too: for a pass
 * over many small mutable objects that share pages (a dict, its entries, the
 * objects they hold), one read per page. What it reads is as of the page's
 * first read in the epoch; a pass that must see memory anew starts one.
 */
void remote_cache_mutable(struct remote *r, bool on);
void remote_invalidate_all(struct remote *r);
/*
 * The page cache's memory given back (its pages are only good for one pass
 * anyway): made again by the next cached read.
 */
void remote_release(struct remote *r);
const struct remote_stats *remote_stats(const struct remote *r);
/* Read a pointer / u32 / int helpers, uncached. */
int remote_ptr(struct remote *r, uint64_t addr, uint64_t *out);

#endif /* PBP_PROC_REMOTE_H */
