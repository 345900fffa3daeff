/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_MAPS_H
#define PBP_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct map_entry {
	uint64_t start, end, offset;
	char perms[5];
	uint64_t dev;           /* makedev(major, minor) of the file's device: stat's st_dev */
	uint64_t inode;
	char path[512];         /* as written in maps; may be empty */
	bool deleted;           /* path ends in " (deleted)" (kept in path as written) */
};

/*
 * Parse one line of /proc/PID/maps ("start-end perms offset dev inode  path"),
 * with or without its trailing newline. The path is everything after the
 * padding that follows the inode (it may contain spaces; it may be absent).
 * 0 on success; -PBP_E_CORRUPT on a malformed line (missing field, bad or overflowing
 * number, start > end, junk after a newline) or a path that does not fit.
 */
int maps_parse_line(const char *line, struct map_entry *e);

/*
 * The next well-formed entry of an open maps file: malformed lines, and
 * lines longer than any path an entry can hold, are passed over whole.
 * 0 with *e filled; -PBP_E_NOENT at the end.
 */
int maps_next(FILE *f, struct map_entry *e);

#endif /* PBP_PROC_MAPS_H */
