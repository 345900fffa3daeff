/* SPDX-License-Identifier: MIT */
/* Which writer a profile goes to: by -f NAME, else by the output file's extension. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "pyprof.h"

typedef int (*writer_fn)(const struct agg *a, const struct profile_meta *m, FILE *o);

static const struct format {
	const char *name;
	const char *exts[3];
	writer_fn write;
} formats[] = {
	{ "collapsed", { ".txt", ".collapsed", ".folded" }, collapsed_write },
	{ "speedscope", { ".speedscope.json", ".json" }, speedscope_write },
	{ "pprof", { ".pb.gz", ".pprof" }, pprof_write },
	{ "pstats", { ".pstats", ".prof" }, pstats_write },
	{ "html", { ".html", ".htm" }, html_write },
	{ "svg", { ".svg" }, svg_write },
};

#define NFORMATS (int)(sizeof(formats) / sizeof(formats[0]))

int format_by_name(const char *name)
{
	for (int i = 0; i < NFORMATS; i++)
		if (strcasecmp(formats[i].name, name) == 0)
			return i;
	return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

int format_by_path(const char *path)
{
	if (!path)
		return 0;
	for (int i = 0; i < NFORMATS; i++)
		for (int j = 0; j < 3 && formats[i].exts[j]; j++)
			if (ends_with(path, formats[i].exts[j]))
				return i;
	return 0;   /* collapsed: readable anywhere, and what flamegraph.pl takes */
}

const char *format_name(int fmt)
{
	return fmt >= 0 && fmt < NFORMATS ? formats[fmt].name : "?";
}

void format_list(FILE *o)
{
	for (int i = 0; i < NFORMATS; i++)
		fprintf(o, "%s%s", i ? ", " : "", formats[i].name);
}

int format_write(int fmt, const struct agg *a, const struct profile_meta *m, FILE *o)
{
	if (fmt < 0 || fmt >= NFORMATS)
		return -1;
	return formats[fmt].write(a, m, o);
}

int profile_write(int fmt, const struct agg *a, const struct profile_meta *m, const char *path)
{
	struct output out;
	int err = output_open(&out, path);

	if (!err && format_write(fmt, a, m, out.f) != 0)
		err = -EIO;
	if (!err)
		return output_commit(&out);
	if (out.f)
		output_abort(&out);
	return err;
}
