/* SPDX-License-Identifier: MIT */
/*
 * A profile file read back, whatever its format, and what went wrong said
 * in one line; see profload.h. The reading is read/profread.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>

#include "cli/profload.h"
#include "read/profread.h"
#include "cli/args.h"
#include "session/report.h"
#include "core/errors.h"
#include "sample/mode.h"

/* The exit code of profile_read's failure, said in one line. */
static int say(const char *name, int err, const struct profread_fail *f)
{
	if (err == -PBP_E_IO || err == -PBP_E_CORRUPT)
		fprintf(stderr, "pybpfprof: cannot read %s: %s\n", name, err == -PBP_E_IO ? strerror(f->err) : f->why);
	else if (err == -PBP_E_INVAL && f->lineno)
		fprintf(stderr, "pybpfprof: %s:%zu: not a collapsed-stack line: %s\n", name, f->lineno, f->why);
	else if (err == -PBP_E_INVAL)
		fprintf(stderr, "pybpfprof: %s: not a profile pybpfprof reads (collapsed stacks or pprof): %s\n",
			name, f->why);
	else if (err)
		return report_error(NULL, err);   /* out of memory: the limit named, exit status 12 */
	return !err ? EXIT_OK : err == -PBP_E_INVAL ? EXIT_USAGE : EXIT_IO;
}

int profile_load(const char *path, struct agg *a)
{
	bool std = !path || !strcmp(path, "-");
	const char *name = std ? "stdin" : path;
	int fd = std ? 0 : open(path, O_RDONLY | O_CLOEXEC), err = -PBP_E_IO;
	struct profread_fail f = { .err = errno };

	if (fd >= 0)
		err = profile_read(a, fd, &f);
	if (fd > 0)     /* stdin stays open */
		close(fd);
	return say(name, err, &f);
}

void profload_meta_option(int key, const char *arg, struct argp_state *st, unsigned *hz, const char **mode)
{
	unsigned long long v;
	int m;

	if (key == 'F' && parse_uint(arg, 1, 100000, &v) == 0)
		*hz = (unsigned)v;
	else if (key == 'F')
		argp_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
	else if ((m = mode_by_name(arg)) >= 0)
		*mode = mode_name(m);
	else
		argp_error(st, "invalid mode '%s' (cpu, wall or gil)", arg);
}
