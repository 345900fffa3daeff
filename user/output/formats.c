/* SPDX-License-Identifier: MIT */
/* Which writer a profile goes to: by -f NAME, else by the output file's extension. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdbool.h>
#include <stddef.h>

#include "output/formats.h"
#include "aggregate/aggregate.h"
#include "output/output.h"
#include "core/errors.h"
#include "output/writers.h"

typedef int (*writer_fn)(const struct agg *a, const struct profile_meta *m, FILE *o);

static const struct format {
	const char *name;
	const char *exts[3];
	writer_fn write;
} formats[] = {
	{ "collapsed", { ".txt", ".collapsed", ".folded" }, collapsed_write },
	{ "gecko", { ".gecko.json", ".gecko" }, gecko_write },      /* before .json */
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

static int format_by_ext(const char *path)
{
	for (int i = 0; i < NFORMATS; i++)
		for (int j = 0; j < 3 && formats[i].exts[j]; j++)
			if (ends_with(path, formats[i].exts[j]))
				return i;
	return -1;
}

/* "x.txt.gz" is collapsed, "x.json.gz" speedscope ..., gzipped on the way; "x.pb.gz" is pprof. */
int format_by_path(const char *path)
{
	char inner[4096];
	int fmt;

	if (!path)
		return 0;
	fmt = format_by_ext(path);
	if (fmt < 0 && ends_with(path, ".gz") &&
	    snprintf(inner, sizeof(inner), "%.*s", (int)(strlen(path) - 3), path) < (int)sizeof(inner))
		fmt = format_by_ext(inner);
	return fmt < 0 ? 0 : fmt;   /* collapsed: readable anywhere, and what flamegraph.pl takes */
}

const char *format_unknown_ext(const char *path, char *ext, size_t n)
{
	const char *base, *dot;
	size_t len;

	if (!path || format_by_ext(path) >= 0)
		return NULL;    /* whole-path extensions too: "x.pb.gz" */
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	len = strlen(base);
	if (ends_with(base, ".gz") && len > 3)
		len -= 3;       /* "x.gz" alone is collapsed, gzipped; "x.html.gz" html */
	dot = memrchr(base, '.', len);
	if (!dot || dot == base || dot + 1 == base + len)
		return NULL;
	for (const char *c = dot + 1; c < base + len; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return NULL;
	snprintf(ext, n, "%.*s", (int)(base + len - dot), dot);
	return format_by_ext(ext) >= 0 ? NULL : ext;
}

const char *format_name(int fmt)
{
	return fmt >= 0 && fmt < NFORMATS ? formats[fmt].name : "?";
}

int format_write(int fmt, const struct agg *a, const struct profile_meta *m, FILE *o)
{
	if (fmt < 0 || fmt >= NFORMATS)
		return -PBP_E_INVAL;
	return formats[fmt].write(a, m, o);
}

/* pprof is a gzip file already: a .gz path adds no second layer to it. */
static bool gzipped(int fmt, const char *path)
{
	return path && ends_with(path, ".gz") && formats[fmt].write != pprof_write;
}

int profile_open(struct output *out, int fmt, const char *path)
{
	return output_open(out, path, fmt >= 0 && fmt < NFORMATS && gzipped(fmt, path));
}

int profile_write_to(struct output *out, int fmt, const struct agg *a, const struct profile_meta *m)
{
	int err = format_write(fmt, a, m, out->f);

	/* A write that failed: the stream kept its errno (PBP_E_IO); else the writer's own error. */
	if (err) {
		output_abort(out);
		return out->err || err >= 0 ? -PBP_E_IO : err;
	}
	return output_commit(out);
}

int profile_write(int fmt, const struct agg *a, const struct profile_meta *m, const char *path)
{
	struct output out;
	int err = profile_open(&out, fmt, path);

	if (!err)
		err = profile_write_to(&out, fmt, a, m);
	if (err)
		output_error(&out, path, err);
	return err;
}
