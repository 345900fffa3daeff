/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for maps_parse_line: arbitrary bytes as one line.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
 *       tests/fuzz/fuzz_maps.c user/proc/maps.c -o /tmp/fm
 *   /tmp/fm -max_total_time=60 /tmp/fm-corpus tests/fuzz/corpus/maps
 *
 * An accepted line must give a well-formed entry, and printing that entry
 * back in the kernel's format must parse to the same entry.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* strnlen under -std=c11 */
#endif
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "proc/maps.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

static void check_entry(const struct map_entry *e)
{
	size_t n = strnlen(e->path, sizeof(e->path));
	static const char del[] = " (deleted)";

	MUST(n < sizeof(e->path));
	MUST(e->start <= e->end);
	MUST(strlen(e->perms) == 4);
	MUST(strchr("r-", e->perms[0]) && strchr("w-", e->perms[1]) &&
	     strchr("x-", e->perms[2]) && strchr("ps", e->perms[3]));
	MUST(!strchr(e->path, '\n'));
	MUST(e->path[0] != ' ');
	MUST(e->deleted == (n > sizeof(del) - 1 &&
			    strcmp(e->path + n - (sizeof(del) - 1), del) == 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct map_entry e, again;
	char *line, buf[700];
	int r;

	line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	r = maps_parse_line(line, &e);
	MUST(r == 0 || r == -PBP_E_CORRUPT);
	if (r == 0) {
		char *nl = strchr(line, '\n');

		MUST(!nl || nl[1] == '\0');
		check_entry(&e);
		snprintf(buf, sizeof(buf), "%08" PRIx64 "-%08" PRIx64 " %s %08" PRIx64 " fd:01 %" PRIu64 "%s%s\n",
			 e.start, e.end, e.perms, e.offset, e.inode, e.path[0] ? "    " : "", e.path);
		MUST(maps_parse_line(buf, &again) == 0);
		MUST(again.start == e.start && again.end == e.end && again.offset == e.offset &&
		     again.inode == e.inode && strcmp(again.perms, e.perms) == 0 &&
		     strcmp(again.path, e.path) == 0 && again.deleted == e.deleted);
	}
	free(line);
	return 0;
}
