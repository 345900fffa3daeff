/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof [options] [-p PID | -- command]`: sample Python processes from
 * the kernel and write the profile. Flow: kernel samples -> symbolize ->
 * aggregate -> output, one direction only.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "cli/record.h"
#include "aggregate/aggregate.h"
#include "aggregate/sources.h"
#include "cli/args.h"
#include "session/privs.h"
#include "session/report.h"
#include "session/run.h"
#include "cli/runopts.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/stagecpu.h"
#include "cpython/process.h"
#include "output/formats.h"
#include "output/output.h"
#include "output/writers.h"
#include "proc/pidns.h"
#include "proc/srcroot.h"
#include "sample/loop.h"
#include "sample/sampler.h"
#include "sample/target.h"
#include "symbol/natsym.h"


/* ------------------------------------------------------------- options */

enum { OPT_STATS = 1000, OPT_STATUS, OPT_SUBPROC, OPT_NO_SUBPROC, OPT_ASYNC };

static const struct argp_option opts[] = {
	{ "subprocesses", OPT_SUBPROC, NULL, 0,
	  "With -p: profile the processes' descendants too, running and started later "
	  "(a command's are followed by default)", 1 },
	{ "no-subprocesses", OPT_NO_SUBPROC, NULL, 0,
	  "With a command: profile the command's own process only, not the processes it starts", 1 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "output", 'o', "FILE", 0, "Write the profile here (default: stdout)", 3 },
	{ "format", 'f', "FORMAT", 0,
	  "collapsed, html, svg, speedscope, gecko, pprof or pstats (default: from the -o extension; none: "
	  "collapsed; one no format has: exit 2)", 3 },
	{ "threads", 't', NULL, 0, "Add a root frame per thread: 'thread TID name'", 3 },
	{ "status", OPT_STATUS, NULL, 0,
	  "Add a leaf frame with the thread's status: [running], [native, no GIL], [runnable], "
	  "[gil wait], [sleeping], [disk], [stopped]", 3 },
	{ "async", OPT_ASYNC, NULL, 0,
	  "Python 3.11+: put a frame 'task NAME' for the asyncio task a sample's thread runs, and "
	  "one for each task awaiting it, above the task's coroutine frames; in wall mode also each "
	  "waiting task once a tick, ending in '[awaiting] WHAT'", 3 },
	{ "stats", OPT_STATS, "FORM", OPTION_ARG_OPTIONAL,
	  "End-of-run figures on stderr: text (the summary and cache and read statistics; "
	  "--stats alone), json (all of them as one JSON line, no summary or table), "
	  "none (no summary or table; warnings stay)", 3 },
	{ "quiet", 'q', NULL, 0, "No live line, summary or top-functions table on stderr", 3 },
	{ 0 },
};

/* --stats[=FORM], in any case: alone, text; -1 for an unknown form. */
static int stats_by_name(const char *s)
{
	if (!s || !strcasecmp(s, "text"))
		return STATS_TEXT;
	if (!strcasecmp(s, "json"))
		return STATS_JSON;
	if (!strcasecmp(s, "none"))
		return STATS_NONE;
	return -1;
}

static error_t parse_opt(int key, char *arg, struct argp_state *st)
{
	struct record *r = st->input;
	int form;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = r;
		break;
	case 'f':
		r->format = format_by_name(arg);
		if (r->format < 0)
			argp_error(st, "unknown format '%s'", arg);
		break;
	case 'o': r->outpath = output_path(st, arg); break;
	case 't': r->c.o.per_thread = true; break;
	case OPT_STATUS: r->c.o.status = true; break;
	case OPT_ASYNC: r->c.o.async = true; break;
	case 'q': r->quiet = true; break;
	case OPT_SUBPROC: r->subprocesses = 1; break;
	case OPT_NO_SUBPROC: r->subprocesses = -1; break;
	case OPT_STATS:
		form = stats_by_name(arg);
		if (form < 0)
			argp_error(st, "invalid --stats '%s' (text, json or none)", arg);
		r->stats = (enum stats_form)form;
		break;
	case ARGP_KEY_ARGS:
		r->cmd = st->argv + st->next;
		break;
	case ARGP_KEY_ARG:
		return ARGP_ERR_UNKNOWN;
	case ARGP_KEY_END:
		runopts_end_targets(st, r);
		output_format_check(st, r->outpath, r->format >= 0);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char doc[] =
	"Sample the Python stacks of running processes from the kernel, at a fixed frequency, "
	"without stopping them.\n\n"
	"The format follows the -o extension: .txt/.collapsed (collapsed stacks), .html "
	"(interactive flame graph), .svg, .json (speedscope), .pb.gz/.pprof (pprof), .pstats; "
	"any of them + .gz: gzipped (.gz alone: collapsed); no extension: collapsed, "
	"one no format has: exit 2 (name the format with -f).\n\n"
	"Subcommands: 'pybpfprof top -p PID' shows where the time goes, live; "
	"'pybpfprof dump -p PID' prints every thread's stack once; "
	"'pybpfprof convert' turns collapsed stacks into another format; "
	"'pybpfprof diff BEFORE AFTER' compares two profiles; "
	"'pybpfprof agent' profiles the host continuously and serves the profiles. "
	"See 'pybpfprof top --help', 'pybpfprof dump --help', 'pybpfprof convert --help', 'pybpfprof diff --help', 'pybpfprof agent --help' and man pybpfprof."
	"\vExamples:\n"
	"  sudo pybpfprof -p 1234 -d 10 -o profile.html\n"
	"  sudo pybpfprof -p 1234 -F 99 -d 10 -o profile.txt\n"
	"  sudo pybpfprof -o app.txt -- python3 app.py\n"
	"  sudo pybpfprof -p 1234 --subprocesses -d 30 -o workers.html\n"
	"  sudo pybpfprof -p 1234 -m wall --status -t -o wall.txt\n"
	"  sudo pybpfprof -a -d 60 -o host.pb.gz\n"
	"  flamegraph.pl profile.txt > profile.svg";

/* ------------------------------------------------------------- sinks */

/* The profile file (-o, or stdout), opened before sampling started. */
static int write_profile(void *ctx, const struct agg *a, const struct window *w)
{
	struct record *r = ctx;
	struct sources src = { 0 };
	struct profile_meta m = { .mode = mode_name(r->c.o.mode), .hz = r->c.o.hz,
				  .start_unix_ns = w->start_unix_ns,
				  .duration_ns = w->end_ns - w->start_ns, .timeline = r->c.timeline };
	int err = run_sources(r, a, &src, &m);

	if (r->c.timeline && r->c.timeline->full)
		fprintf(stderr, "pybpfprof: warning: more than %zu samples: the Gecko profile has no sample "
			"times, its samples are laid out by status and stack\n", r->c.timeline->max);
	if (!err)
		err = profile_write_to(&r->out, run_output_format(r), a, &m);
	sources_free(&src);
	if (err)
		output_error(&r->out, r->outpath, err);
	return err;
}

/* The summary and top functions on stderr (none with -q), and --stats. */
static int print_report(void *ctx, const struct agg *a, const struct window *w)
{
	(void)w;
	summary_print(ctx, a);
	return 0;
}

/* Set up, sample until the end, then the one window of the whole run closes. */
static int run(struct record *r, int *go_fd)
{
	int code = run_setup(r, go_fd);

	if (code)
		return code;
	loop_add_sink(&r->loop, &(struct window_sink){ write_profile, r });
	loop_add_sink(&r->loop, &(struct window_sink){ print_report, r });
	run_loop(r);
	if (r->follow && r->cmd && (code = launch_check_profiled(r)) != 0)
		return code;
	/* Process roots only when more than one process is in the profile, as without following. */
	if (r->follow && r->npids < 2)
		agg_drop_single_root(r->c.agg);
	code = loop_close_window(&r->loop, r->end_ns, true);
	return code ? exit_code_for(code) : 0;
}

int record_main(int argc, char **argv)
{
	static const struct argp_child children[] = { { &runopts_argp, 0, NULL, 0 }, { 0 } };
	struct argp argp = { opts, parse_opt, "[-- COMMAND [ARG...]]", doc, children, NULL, NULL };
	struct record r = { .format = -1, .c.o = { .mode = MODE_CPU, .hz = 99 }, .c.ops = &bpf_sampler_ops };
	int go_fd = -1, code;

	argp_parse(&argp, argc, argv, 0, NULL, &r);
	code = run_alloc(&r);
	if (!code)
		code = run(&r, &go_fd);
	run_cleanup(&r, go_fd);
	if (r.child_reaped && code == EXIT_OK)
		code = launch_status(&r);
	return code;
}
