/* SPDX-License-Identifier: MIT */
/*
 * Reads of another process's memory with process_vm_readv, which never
 * stops the target. remote_read_cached goes through a bounded
 * set-associative page cache whose pages are valid for one epoch: a page
 * holds objects of different lifetimes, so a page cached long ago may not
 * hold an object allocated since. Callers start an epoch per sampling pass
 * (remote_invalidate_all): within it, frames that share a page (3.11+ keeps
 * them contiguous per thread) and code objects cost one read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/remote.h"
#include "core/errors.h"

#define PAGE_SHIFT 12
#define PAGE_SZ (1u << PAGE_SHIFT)
#define WAYS 4

struct page {
	uint64_t addr;          /* page-aligned target address; 0 = empty */
	uint64_t used;          /* last use, for LRU within a set */
	uint64_t epoch;
	uint8_t *data;
};

struct remote {
	pid_t pid;
	unsigned nsets;         /* power of two, 0 = no cache */
	uint64_t clock;
	uint64_t epoch;
	struct page *pages;     /* nsets * WAYS */
	uint8_t *arena;
	bool mutable_cached;    /* remote_read goes through the cache too (remote_cache_mutable) */
	struct remote_stats st;
};

struct remote *remote_open(pid_t pid, unsigned pages)
{
	struct remote *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->pid = pid;
	if (pages >= WAYS) {
		unsigned sets = 1;

		while (sets * 2 * WAYS <= pages)
			sets *= 2;
		r->pages = calloc((size_t)sets * WAYS, sizeof(*r->pages));
		if (!r->pages) {
			remote_close(r);
			return NULL;
		}
		r->nsets = sets;        /* the arena is made at the first cached read */
	}
	return r;
}

void remote_close(struct remote *r)
{
	if (!r)
		return;
	free(r->pages);
	free(r->arena);
	free(r);
}

const struct remote_stats *remote_stats(const struct remote *r)
{
	return &r->st;
}

static int read_now(struct remote *r, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec rem = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (len == 0)
		return 0;
	if (addr == 0 || addr + len < addr) {
		r->st.faults++;
		return -PBP_E_FAULT;
	}
	r->st.reads++;
	n = process_vm_readv(r->pid, &local, 1, &rem, 1, 0);
	if (n < 0) {
		if (errno == EFAULT)
			r->st.faults++;
		return errno == ESRCH ? -PBP_E_GONE : pbp_err_from_errno(errno, -PBP_E_FAULT);
	}
	r->st.bytes += (uint64_t)n;
	if ((size_t)n != len) {
		r->st.faults++;
		return -PBP_E_FAULT;
	}
	return 0;
}

int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len)
{
	return r->mutable_cached ? remote_read_cached(r, addr, buf, len) : read_now(r, addr, buf, len);
}

void remote_cache_mutable(struct remote *r, bool on)
{
	r->mutable_cached = on;
}

int remote_ptr(struct remote *r, uint64_t addr, uint64_t *out)
{
	return remote_read(r, addr, out, sizeof(*out));
}

/*
 * The pages' memory, made when a pass first needs it: a process that is
 * never sampled after it was found (most of a node's) holds none.
 */
static bool arena_ready(struct remote *r)
{
	if (r->arena)
		return true;
	r->arena = malloc((size_t)r->nsets * WAYS * PAGE_SZ);
	if (!r->arena)
		return false;
	for (unsigned i = 0; i < r->nsets * WAYS; i++) {
		r->pages[i].data = r->arena + (size_t)i * PAGE_SZ;
		r->pages[i].addr = 0;
	}
	return true;
}

void remote_release(struct remote *r)
{
	free(r->arena);
	r->arena = NULL;
	r->epoch++;
}

static struct page *set_of(struct remote *r, uint64_t page)
{
	/* Mix the bits: code objects cluster, and plain modulo would thrash one set. */
	uint64_t h = (page >> PAGE_SHIFT) * 0x9E3779B97F4A7C15ull;

	return &r->pages[(h >> 32 & (r->nsets - 1)) * WAYS];
}

static struct page *cache_page(struct remote *r, uint64_t page, int *err)
{
	struct page *set = set_of(r, page), *victim = &set[0];

	*err = 0;
	for (int i = 0; i < WAYS; i++) {
		if (set[i].addr == page && set[i].epoch == r->epoch) {
			set[i].used = ++r->clock;
			r->st.hits++;
			return &set[i];
		}
		if (set[i].epoch != r->epoch)
			set[i].used = 0;
		if (set[i].used < victim->used)
			victim = &set[i];
	}
	r->st.misses++;
	if (victim->addr && victim->epoch == r->epoch)
		r->st.evictions++;
	victim->addr = 0;
	*err = read_now(r, page, victim->data, PAGE_SZ);
	if (*err)
		return NULL;
	victim->addr = page;
	victim->epoch = r->epoch;
	victim->used = ++r->clock;
	return victim;
}

int remote_read_cached(struct remote *r, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;

	if (!r->nsets || !arena_ready(r))
		return read_now(r, addr, buf, len);     /* no memory for pages: read it all */
	if (addr == 0 || addr + len < addr)
		return -PBP_E_FAULT;
	while (len) {
		uint64_t page = addr & ~(uint64_t)(PAGE_SZ - 1);
		size_t in = addr - page, n = PAGE_SZ - in;
		struct page *p;
		int err;

		if (n > len)
			n = len;
		p = cache_page(r, page, &err);
		if (!p) {
			if (err != -PBP_E_FAULT)
				return err;
			/* A page at the edge of a mapping: read only what was asked. */
			return read_now(r, addr, out, len);
		}
		memcpy(out, p->data + in, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

void remote_invalidate_all(struct remote *r)
{
	r->epoch++;
}
