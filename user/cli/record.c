/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof [options] [-p PID | -- command]`: sample Python processes from
 * the kernel and write the profile. Flow: kernel samples -> symbolize ->
 * aggregate -> output, one direction only.
 */
#include <argp.h>
#include <strings.h>
#include <stdbool.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "cli/args.h"
#include "cli/record.h"
#include "cli/runopts.h"
#include "core/errors.h"
#include "output/formats.h"
#include "sample/loop.h"
#include "session/report.h"
#include "session/session.h"

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
	struct session_opts *r = st->input;
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
	case 't': r->sampling.per_thread = true; break;
	case OPT_STATUS: r->sampling.status = true; break;
	case OPT_ASYNC: r->sampling.async = true; break;
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
	return session_write(ctx, a, w, true);
}

/* The summary and top functions on stderr (none with -q), and --stats. */
static int print_report(void *ctx, const struct agg *a, const struct window *w)
{
	(void)w;
	session_summary(ctx, a);
	return 0;
}

/* Set up, sample until the end, then the one window of the whole run closes. */
static int run(struct session *s)
{
	int code = session_start(s);

	if (code)
		return code;
	session_add_sink(s, &(struct window_sink){ .write = write_profile, .ctx = s });
	session_add_sink(s, &(struct window_sink){ .write = print_report, .ctx = s });
	session_run(s);
	if ((code = session_check_profiled(s)) != 0)
		return code;
	code = session_close_run(s, true);
	return code ? exit_code_for(code) : 0;
}

int record_main(int argc, char **argv)
{
	static const struct argp_child children[] = { { &runopts_argp, 0, NULL, 0 }, { 0 } };
	struct argp argp = { opts, parse_opt, "[-- COMMAND [ARG...]]", doc, children, NULL, NULL };
	struct session_opts o = { .format = -1, .sampling = { .mode = MODE_CPU, .hz = 99 } };
	struct session *s;
	int code;

	argp_parse(&argp, argc, argv, 0, NULL, &o);
	code = session_new(&o, &s);
	if (!code)
		code = run(s);
	code = session_stop(s, code);
	session_free(s);
	return code;
}
