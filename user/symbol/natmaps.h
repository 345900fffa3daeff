/* SPDX-License-Identifier: MIT */
/*
 * A process's executable mappings, for naming native addresses: which file
 * (as the process maps it) and which offset in it an address is. Read from
 * /proc/PID/maps, sorted by address, looked up by binary search.
 */
#ifndef PBP_SYMBOL_NATMAPS_H
#define PBP_SYMBOL_NATMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct natmod;

struct natmap {
	uint64_t start, end, offset;
	const char *path;       /* as in maps; "" for an anonymous mapping (JIT code) */
	bool deleted;           /* the file was deleted or replaced since it was mapped */
	uint64_t inode;         /* as in maps: the file opened must be this one */
	bool opened;            /* mod is what natsym_open said (NULL: no readable ELF file) */
	struct natmod *mod;
};

struct natmaps {
	struct natmap *m;       /* sorted by start, not overlapping */
	size_t n, cap;
	char *paths;            /* the paths, NUL-separated, one block */
	size_t plen, pcap;
	uint64_t read_ns;       /* when last read (mono_ns), 0: never */
};

/* Executable mappings of pid, replacing what nm held. 0, -PBP_E_GONE, -PBP_E_NOMEM. */
int natmaps_read(struct natmaps *nm, pid_t pid);
/* The same from maps text (unit tests); lines that do not parse are skipped. */
int natmaps_parse(struct natmaps *nm, FILE *f);
/* The mapping holding addr, or NULL. */
const struct natmap *natmaps_find(const struct natmaps *nm, uint64_t addr);
void natmaps_free(struct natmaps *nm);

#endif /* PBP_SYMBOL_NATMAPS_H */
