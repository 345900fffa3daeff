/* SPDX-License-Identifier: MIT */
/*
 * The kernel's counters, summed over the CPUs (counters.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "sample/counters.h"

/* One counter's per-CPU values at a time: a kernel without batch lookups (before 5.6). */
static void by_key(struct counters *c, int fd)
{
	size_t n = (size_t)c->ncpu;

	for (__u32 i = 0; i < PBP_STAT__COUNT; i++)
		if (bpf_map_lookup_elem(fd, &i, c->vals + i * n))
			memset(c->vals + i * n, 0, sizeof(*c->vals) * n);
}

/*
 * Every counter of every CPU in one system call: the agent reads them each
 * second, and a lookup per counter was 21 calls where the slice needs one
 * figure. -ENOENT with all of them copied is the array's end reached.
 */
static void fill(struct counters *c, int fd)
{
	__u32 keys[PBP_STAT__COUNT], next = 0, count = PBP_STAT__COUNT;
	int err;

	if (!c->no_batch) {
		err = bpf_map_lookup_batch(fd, NULL, &next, keys, c->vals, &count, NULL);
		if ((err == 0 || err == -ENOENT) && count == PBP_STAT__COUNT)
			return;
		c->no_batch = true;
	}
	by_key(c, fd);
}

static bool counters_alloc(struct counters *c)
{
	c->ncpu = libbpf_num_possible_cpus();
	if (c->ncpu > 0)
		c->vals = calloc((size_t)c->ncpu * PBP_STAT__COUNT, sizeof(*c->vals));
	return c->vals != NULL;
}

void counters_read(struct counters *c, int fd, uint64_t out[PBP_STAT__COUNT])
{
	memset(out, 0, sizeof(uint64_t) * PBP_STAT__COUNT);
	if (!c->vals && !counters_alloc(c))
		return;
	fill(c, fd);
	for (size_t i = 0; i < PBP_STAT__COUNT; i++)
		for (size_t k = 0; k < (size_t)c->ncpu; k++)
			out[i] += c->vals[i * (size_t)c->ncpu + k];
}

uint64_t counters_one(struct counters *c, int fd, enum pbp_stat which)
{
	__u32 key = (__u32)which;
	uint64_t sum = 0;

	if (!c->vals && !counters_alloc(c))
		return 0;
	if (bpf_map_lookup_elem(fd, &key, c->vals))
		return 0;
	for (int k = 0; k < c->ncpu; k++)
		sum += c->vals[k];
	return sum;
}

void counters_free(struct counters *c)
{
	free(c->vals);
	memset(c, 0, sizeof(*c));
}
