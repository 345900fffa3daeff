/* SPDX-License-Identifier: MIT */
#ifndef PBP_READ_PROFREAD_H
#define PBP_READ_PROFREAD_H

#include <stddef.h>

struct agg;

/* Why a profile could not be read, for the one message that says it. */
struct profread_fail {
	int err;                /* -PBP_E_IO: the errno */
	size_t lineno;          /* -PBP_E_INVAL: the collapsed line that is not a stack; 0: the whole file */
	const char *why;        /* -PBP_E_CORRUPT, -PBP_E_INVAL: why */
	char text[96];          /* what why points to when it is not a constant */
};

/*
 * A profile pybpfprof wrote that keeps stacks, read from fd into a:
 * collapsed stacks or pprof, gzipped or not; the first bytes decide, not
 * the name (see profread.c). Every reader of a profile file (convert,
 * diff) comes through here, so all check the same things.
 *
 * 0; -PBP_E_IO when reading failed (f->err); -PBP_E_CORRUPT for damaged
 * gzip data, a stream cut short or with bytes after its end among them
 * (f->why); -PBP_E_INVAL when the file is not such a profile (f->lineno 0:
 * f->why names what it is instead) or line f->lineno of collapsed stacks is
 * not a stack (f->why); -PBP_E_NOMEM.
 */
int profile_read(struct agg *a, int fd, struct profread_fail *f);

#endif /* PBP_READ_PROFREAD_H */
