/* SPDX-License-Identifier: MIT */
/*
 * Command-line values, checked strictly: what strtoull and strtod would
 * quietly accept (signs, spaces, hex, inf) is refused.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli/args.h"
#include "output/formats.h"
#include "core/errors.h"
#include "sample/target.h"

int parse_uint(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!s[0] || strspn(s, "0123456789") != strlen(s))
		return -PBP_E_INVAL;      /* strtoull would take " 1", "+1" and "-1" (as 2^64 - 1) */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v < min || v > max)
		return -PBP_E_INVAL;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	/* strtod would take " 1", "-1", "0x10", "inf" and "nan". */
	if (!(s[0] == '.' || (s[0] >= '0' && s[0] <= '9')) ||
	    strspn(s, "0123456789.eE+-") != strlen(s))
		return -PBP_E_INVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !isfinite(v) || v < min || v > max)
		return -PBP_E_INVAL;
	*out = v;
	return 0;
}

int parse_pid(const char *s, pid_t *pid)
{
	unsigned long long v;

	if (parse_uint(s, 1, INT_MAX, &v))
		return -PBP_E_INVAL;
	*pid = (pid_t)v;
	return 0;
}

const char *output_path(struct argp_state *st, const char *arg)
{
	if (!arg[0])
		argp_error(st, "invalid -o '' (a file name, or - for stdout)");
	return arg;
}

void output_format_check(struct argp_state *st, const char *path, bool format_given)
{
	char ext[32];

	if (!format_given && format_unknown_ext(path, ext, sizeof(ext)))
		argp_error(st, "-o %s: no format is written as '%s': name one with -f (collapsed, html, "
			   "svg, speedscope, gecko, pprof or pstats)", path, ext);
}

const char *input_path(struct argp_state *st, const char *what, const char *arg)
{
	if (!arg[0])
		argp_error(st, "invalid %s '' (a file name, or - for stdin)", what);
	return arg;
}
