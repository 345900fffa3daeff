/* SPDX-License-Identifier: MIT */
/*
 * pybpfprof diff BEFORE AFTER: two profiles of one program compared, as a
 * differential flame graph page or as collapsed stacks with two counts.
 */
#include <argp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "cli/diff.h"
#include "aggregate/aggregate.h"
#include "aggregate/compare.h"
#include "cli/args.h"
#include "cli/profload.h"
#include "session/report.h"
#include "core/errors.h"
#include "output/formats.h"
#include "output/output.h"
#include "output/writers.h"

struct diff_args {
	const char *in[2], *out, *format, *mode;
	unsigned hz;
	int nin;
};

static const struct argp_option diff_opts[] = {
	{ "output", 'o', "FILE", 0, "Where to write (default: stdout)", 0 },
	{ "format", 'f', "FORMAT", 0, "html or collapsed (default: from the -o extension; none: collapsed)", 0 },
	{ "frequency", 'F', "HZ", 0, "Rate the profiles were taken at, for times in the page (default 99)", 0 },
	{ "mode", 'm', "MODE", 0, "cpu, wall or gil: what the samples counted (default cpu)", 0 },
	{ 0 },
};

static bool diffable(int fmt)
{
	return fmt == format_by_name("html") || fmt == format_by_name("collapsed");
}

static error_t diff_parse(int key, char *arg, struct argp_state *st)
{
	struct diff_args *a = st->input;

	switch (key) {
	case 'o': a->out = output_path(st, arg); break;
	case 'f':
		if (!diffable(format_by_name(arg)))
			argp_error(st, "diff writes html or collapsed, not '%s'", arg);
		a->format = arg;
		break;
	case 'F':
	case 'm':
		profload_meta_option(key, arg, st, &a->hz, &a->mode);
		break;
	case ARGP_KEY_ARG:
		if (a->nin == 2)
			argp_error(st, "unexpected argument '%s' (diff takes BEFORE and AFTER)", arg);
		a->in[a->nin] = input_path(st, a->nin ? "AFTER" : "BEFORE", arg);
		a->nin++;
		break;
	case ARGP_KEY_END:
		if (a->nin < 2)
			argp_error(st, "diff needs two profiles: BEFORE and AFTER");
		output_format_check(st, a->out, a->format != NULL);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char diff_doc[] =
	"Compare two profiles of one program (collapsed stacks or pprof, as pybpfprof writes them, "
	"gzipped or not), each side as shares of its own samples. html: a differential flame graph "
	"(red: grew, blue: shrank) and a table of functions; collapsed: each stack with two counts, "
	"BEFORE's scaled to AFTER's total, which flamegraph.pl draws as a differential graph."
	"\vExamples:\n"
	"  pybpfprof diff before.txt after.txt -o diff.html\n"
	"  pybpfprof diff before.pb.gz after.pb.gz -f collapsed | flamegraph.pl > diff.svg";

/* Both profiles read, neither empty: EXIT_OK, or the code of what was said. */
static int load_both(const struct diff_args *a, struct agg *side[2])
{
	for (int s = 0; s < 2; s++) {
		int code = profile_load(a->in[s], side[s]);

		if (code != EXIT_OK)
			return code;
		if (!agg_total(side[s])) {
			fprintf(stderr, "pybpfprof: %s: no samples to compare\n", a->in[s]);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

static int write_diff(const struct diff_args *a, int fmt, struct agg *side[2], FILE *o)
{
	struct agg_diff d;
	struct profile_meta m = { .mode = a->mode, .hz = a->hz };
	int err;

	if (fmt == format_by_name("collapsed"))
		return diff_collapsed_write(side[DIFF_BEFORE], side[DIFF_AFTER], o);
	if ((err = agg_diff_build(&d, side[DIFF_BEFORE], side[DIFF_AFTER])) != 0)
		return err;
	m.diff = &d;
	err = html_write(d.u, &m, o);
	agg_diff_free(&d);
	return err;
}

/* A resource limit, named (ulimit -v), exit status 12: not an internal error. */
static int nomem(void)
{
	return report_error(NULL, -PBP_E_NOMEM);
}

/* Written and moved into place: EXIT_OK, or the code of what was said. */
static int write_out(const struct diff_args *a, int fmt, struct agg *side[2])
{
	struct output out;
	int err = profile_open(&out, fmt, a->out);    /* a .gz path: gzipped, as record and convert do */

	if (err) {
		output_error(&out, a->out, err);
		return EXIT_IO;
	}
	if ((err = write_diff(a, fmt, side, out.f)) != 0) {
		int io = out.err;

		output_abort(&out);
		if (io) {
			output_error(&out, a->out, -io);
			return EXIT_IO;
		}
		if (err == -PBP_E_LIMIT) {
			fprintf(stderr, "pybpfprof: the two profiles together have more than %d threads in one "
				"process\n", AGG_MAX_THREADS);
			return EXIT_RESOURCES;
		}
		return nomem();
	}
	if ((err = output_commit(&out)) != 0) {
		output_error(&out, a->out, err);
		return EXIT_IO;
	}
	return EXIT_OK;
}

int diff_main(int argc, char **argv)
{
	struct argp argp = { diff_opts, diff_parse, "BEFORE AFTER", diff_doc, NULL, NULL, NULL };
	struct diff_args a = { .hz = 99, .mode = "cpu" };
	struct agg *side[2] = { NULL, NULL };
	int fmt, code;

	argp_parse(&argp, argc, argv, 0, NULL, &a);
	fmt = a.format ? format_by_name(a.format) : format_by_path(a.out);
	if (!diffable(fmt)) {
		fprintf(stderr, "pybpfprof: diff writes html or collapsed, not %s (%s)\n", format_name(fmt), a.out);
		return EXIT_USAGE;
	}
	side[0] = agg_new();
	side[1] = agg_new();
	code = side[0] && side[1] ? load_both(&a, side) : nomem();
	/* A reader that closed the pipe early is said (EPIPE), as when recording. */
	signal(SIGPIPE, SIG_IGN);
	if (code == EXIT_OK)
		code = write_out(&a, fmt, side);
	agg_free(side[0]);
	agg_free(side[1]);
	return code;
}
