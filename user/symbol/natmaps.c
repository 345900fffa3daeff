/* SPDX-License-Identifier: MIT */
/*
 * Executable mappings of a process (natmaps.h). Paths are kept as offsets
 * into one block while reading (it grows), and made pointers at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/natmaps.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/search.h"
#include "proc/maps.h"

static int add_path(struct natmaps *nm, const char *path, size_t *at)
{
	size_t len = strlen(path) + 1;

	if (nm->plen + len > nm->pcap) {
		size_t cap = nm->pcap ? nm->pcap * 2 : 4096;
		char *p;

		while (cap < nm->plen + len)
			cap *= 2;
		p = realloc(nm->paths, cap);
		if (!p)
			return -PBP_E_NOMEM;
		nm->paths = p;
		nm->pcap = cap;
	}
	memcpy(nm->paths + nm->plen, path, len);
	*at = nm->plen;
	nm->plen += len;
	return 0;
}

/*
 * Shared anonymous memory: an mmap of no file with MAP_SHARED (shown as
 * /dev/zero), memfd_create's and SysV shm's. Code there is a JIT's, as in
 * a private anonymous mapping, not a library called "zero".
 */
static bool anonymous_memory(const char *path)
{
	return strcmp(path, "/dev/zero") == 0 || strncmp(path, "/memfd:", 7) == 0 ||
	       strncmp(path, "/SYSV", 5) == 0;
}

static int add_map(struct natmaps *nm, const struct map_entry *e)
{
	size_t at = 0;
	bool deleted = e->deleted;
	char path[sizeof(e->path)];

	/* " (deleted)" is not part of the name; the file is opened through map_files then. */
	snprintf(path, sizeof(path), "%s", e->path);
	if (deleted && strlen(path) > 10)
		path[strlen(path) - 10] = '\0';
	if (path[0] == '[' || anonymous_memory(path))     /* [vdso], [vsyscall]: no file to read */
		path[0] = '\0';
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		struct natmap *m = realloc(nm->m, cap * sizeof(*m));

		if (!m)
			return -PBP_E_NOMEM;
		nm->m = m;
		nm->cap = cap;
	}
	if (add_path(nm, path, &at))
		return -PBP_E_NOMEM;
	nm->m[nm->n++] = (struct natmap){ e->start, e->end, e->offset, (const char *)(uintptr_t)at,
					  deleted, e->inode, false, NULL };
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct natmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Offsets into the path block become pointers; order by address for the search. */
static void finish(struct natmaps *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		nm->m[i].path = nm->paths + (uintptr_t)nm->m[i].path;
	if (nm->n)      /* none: m may be NULL, which qsort must not get */
		qsort(nm->m, nm->n, sizeof(*nm->m), by_start);
	nm->read_ns = mono_ns();
}

int natmaps_parse(struct natmaps *nm, FILE *f)
{
	struct map_entry e;

	nm->n = 0;
	nm->plen = 0;
	while (maps_next(f, &e) == 0) {
		if (e.perms[2] != 'x')
			continue;
		if (add_map(nm, &e) != 0) {
			nm->n = 0;
			return -PBP_E_NOMEM;
		}
	}
	finish(nm);
	return 0;
}

int natmaps_read(struct natmaps *nm, pid_t pid)
{
	char path[64];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pbp_err_from_errno(errno, -PBP_E_GONE);
	err = natmaps_parse(nm, f);
	fclose(f);
	return err;
}

static bool map_starts_by(const void *elem, const void *addr)
{
	return ((const struct natmap *)elem)->start <= *(const uint64_t *)addr;
}

/* Mappings are sorted and do not overlap: only the last starting at or before addr may hold it. */
const struct natmap *natmaps_find(const struct natmaps *nm, uint64_t addr)
{
	size_t n = search_first(nm->m, nm->n, sizeof(*nm->m), &addr, map_starts_by);

	return n && addr < nm->m[n - 1].end ? &nm->m[n - 1] : NULL;
}

void natmaps_free(struct natmaps *nm)
{
	free(nm->m);
	free(nm->paths);
	memset(nm, 0, sizeof(*nm));
}
