/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_SRCROOT_H
#define PBP_PROC_SRCROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Where a profiled process's source files are read from at the end of a
 * run: its root and working directory, opened when it became a target and
 * held, so its files can be read after it exited (and not from the host's
 * path, which may be another file). Processes that share both share one
 * entry (once SRCROOT_MAX_CWD are held, processes share an entry by root
 * alone, without a cwd). Only a file the process itself may read (its owner, group or
 * other bits against the process's uid and groups), regular, named *.py
 * (or *.pyw, or with no extension and a #! line naming python: a script
 * such as pytest-3), is read: a target names its files, and pybpfprof reads
 * as root.
 */
#define SRCROOT_MAX 64          /* entries held, two descriptors each at most */
#define SRCROOT_MAX_CWD 48      /* past this many, a new entry keeps no cwd (relative paths are refused) */
#define SRCROOT_MAX_PIDS 65536
/* Not an entry: why a process has none. */
#define SRCROOT_NONE UINT32_MAX         /* never opened: it had exited first */
#define SRCROOT_FULL (UINT32_MAX - 1)   /* SRCROOT_MAX entries held already */
#define SRCROOT_DENIED (UINT32_MAX - 2) /* not allowed to open its root */
#define SRCROOT_GROUPS 32

struct srcroot {
	int root_fd, cwd_fd;
	dev_t root_dev, cwd_dev;
	ino_t root_ino, cwd_ino;
	uid_t uid;              /* the first process's fsuid, groups: who may read what */
	gid_t gid[SRCROOT_GROUPS];
	int ngid;
};

struct srcroots {
	struct srcroot r[SRCROOT_MAX];
	uint32_t n;
	struct srcroot_pid { uint32_t pid, root; } *pids;       /* sorted by pid */
	uint32_t npids;
};

void srcroots_init(struct srcroots *s);
/*
 * Open pid's root and cwd (once a pid): 0, or -PBP_E_* (gone, not allowed,
 * table full; srcroots_of then says which).
 */
int srcroots_add(struct srcroots *s, pid_t pid);
/* The entry pid's files are read under, or why none: SRCROOT_NONE, _FULL, _DENIED. */
uint32_t srcroots_of(const struct srcroots *s, uint32_t pid);
/*
 * path (absolute: under the root; relative: under the cwd) read whole into
 * *text (malloc'd, NUL-terminated, its length in *len) when it is at most
 * max bytes; its size in *size either way. 0; -PBP_E_LIMIT when it is
 * larger (*text NULL); another -PBP_E_* with why it was not read in why.
 */
int srcroots_read(const struct srcroots *s, uint32_t root, const char *path, size_t max, char **text,
		  size_t *len, size_t *size, char *why, size_t whylen);
void srcroots_close(struct srcroots *s);

#endif /* PBP_PROC_SRCROOT_H */
