/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof convert`: a profile that keeps stacks (collapsed or pprof,
 * gzipped or not) read and written in another format.
 */
#include <argp.h>
#include <signal.h>
#include <stdio.h>

#include "aggregate/aggregate.h"
#include "cli/args.h"
#include "cli/convertcmd.h"
#include "cli/profload.h"
#include "core/errors.h"
#include "output/formats.h"
#include "output/writers.h"
#include "session/report.h"

struct convert_args {
	const char *in, *out, *format, *mode;
	unsigned hz;
};

static const struct argp_option convert_opts[] = {
	{ "input", 'i', "FILE", 0, "Profile to read, as FILE: collapsed stacks or pprof, gzipped or not (default: stdin)", 0 },
	{ "output", 'o', "FILE", 0, "Where to write (default: stdout)", 0 },
	{ "format", 'f', "FORMAT", 0,
	  "collapsed, html, svg, speedscope, gecko, pprof or pstats (default: from the -o extension; none: "
	  "collapsed; one no format has: exit 2)", 0 },
	{ "frequency", 'F', "HZ", 0, "Rate the profile was taken at, for time units (default 99)", 0 },
	{ "mode", 'm', "MODE", 0, "cpu, wall or gil: what the samples counted (default cpu)", 0 },
	{ 0 },
};

static error_t convert_parse(int key, char *arg, struct argp_state *st)
{
	struct convert_args *a = st->input;

	switch (key) {
	case 'i':
		if (a->in)
			argp_error(st, "the input is given once: FILE or -i");
		a->in = input_path(st, "-i", arg);
		break;
	case 'o': a->out = output_path(st, arg); break;
	case 'f':
		if (format_by_name(arg) < 0)
			argp_error(st, "unknown format '%s'", arg);
		a->format = arg;
		break;
	case 'F':
	case 'm':
		profload_meta_option(key, arg, st, &a->hz, &a->mode);
		break;
	case ARGP_KEY_ARG:
		/* the input named as pprof and perf report take it: convert FILE */
		if (a->in)
			argp_error(st, "unexpected argument '%s' (the input is given once: FILE or -i)", arg);
		a->in = input_path(st, "FILE", arg);
		break;
	case ARGP_KEY_END:
		output_format_check(st, a->out, a->format != NULL);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char convert_doc[] =
	"Render a profile pybpfprof wrote that keeps stacks (collapsed stacks or pprof, gzipped or not) in "
	"another format. "
	"-F and -m describe the run the stacks came from: they set time units and labels."
	"\vExamples:\n"
	"  pybpfprof convert profile.txt -o profile.html\n"
	"  pybpfprof convert -i profile.txt -o profile.pb.gz -m wall";

int convert_main(int argc, char **argv)
{
	struct argp argp = { convert_opts, convert_parse, "[FILE]", convert_doc, NULL, NULL, NULL };
	struct convert_args a = { .hz = 99, .mode = "cpu" };
	struct profile_meta m;
	struct agg *agg;
	int fmt, err, code;

	argp_parse(&argp, argc, argv, 0, NULL, &a);
	fmt = a.format ? format_by_name(a.format) : format_by_path(a.out);
	if (!(agg = agg_new()))
		return report_error(NULL, -PBP_E_NOMEM);
	/* collapsed stacks or pprof, gzipped or not; what is wrong is said there */
	if ((code = profile_load(a.in, agg)) != EXIT_OK) {
		agg_free(agg);
		return code;
	}
	m = (struct profile_meta){ .mode = a.mode, .hz = a.hz };
	/* A reader that closed the pipe early is said (EPIPE), as when recording. */
	signal(SIGPIPE, SIG_IGN);
	err = profile_write(fmt, agg, &m, a.out);
	agg_free(agg);
	/* profile_write said what failed; its code maps as every command's (10 I/O, 12 memory) */
	return exit_code_for(err);
}
