/* SPDX-License-Identifier: MIT */
#ifndef PBP_OUTPUT_OUTPUT_H
#define PBP_OUTPUT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct output {
	FILE *f;                /* the writers write here */
	int fd;
	enum { OUT_NONE, OUT_STDOUT, OUT_RENAME, OUT_INPLACE, OUT_SPECIAL } how;
	void *z;                /* a z_stream, for a .gz file */
	int err;                /* errno of what failed first (the -PBP_E_IO returned) */
	bool discard;
	bool unnamed;           /* OUT_RENAME: the temporary has no name yet (O_TMPFILE) */
	size_t written;
	const char *why;        /* a refusal's reason, for output_error() */
	char path[4096];        /* what is written: symlinks followed */
	char tmp[4096 + 8];     /* OUT_RENAME: the temporary beside it */
};

/* The directory a path names a file in: "." for a bare name, "/" for one at the root. */
void path_dir(const char *path, char *dir, size_t size);
/* SUDO_UID/SUDO_GID when run by root through sudo, else (uid_t)-1. */
void sudo_ids(uid_t *uid, gid_t *gid);
/* Open path for writing ("-" or NULL: stdout), gzipping what is written. 0 or -PBP_E_IO. */
int output_open(struct output *out, const char *path, bool gzip);
/* The file renamed into place at the end (NULL: none), for privs_note_output(). */
const char *output_rename_target(const struct output *out);
/* "cannot write PATH: REASON" on stderr, for an error of output_open() or output_commit(). */
void output_error(const struct output *out, const char *path, int err);
/* Flush and move the file into place. 0 or -PBP_E_IO. */
int output_commit(struct output *out);
/* Undo output_open(): nothing written, the temporary removed. Safe to call twice. */
void output_abort(struct output *out);

#endif /* PBP_OUTPUT_OUTPUT_H */
