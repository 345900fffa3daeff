/* SPDX-License-Identifier: MIT */
/*
 * pybpfprof: command line. `pybpfprof [record options] [-- cmd ...]` samples;
 * `pybpfprof dump -p PID` prints every thread's stack once.
 */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "aggregate/aggregate.h"
#include "cli/agent.h"
#include "cli/args.h"
#include "cli/diff.h"
#include "cli/dump.h"
#include "cli/profload.h"
#include "cli/record.h"
#include "cli/report.h"
#include "cli/top.h"
#include "core/errors.h"
#include "core/version.h"
#include "cpython/process.h"
#include "output/formats.h"
#include "output/writers.h"
#include "proc/pidns.h"

const char *argp_program_version = "pybpfprof " PBP_VERSION;
const char *argp_program_bug_address = "the project's issue tracker";

/* ------------------------------------------------------------------ dump */

struct dump_args {
	pid_t pid;
	bool json;
	bool async;
};

#define OPT_ASYNC 0x100

static const struct argp_option dump_opts[] = {
	{ "pid", 'p', "PID", 0, "Process to read (required)", 0 },
	{ "json", 'j', NULL, 0, "Print JSON instead of text", 0 },
	{ "async", OPT_ASYNC, NULL, 0, "Print every asyncio task instead (Python 3.11+): its name, "
	  "state, coroutine chain and the tasks awaiting it", 0 },
	{ 0 },
};

static error_t dump_parse(int key, char *arg, struct argp_state *st)
{
	struct dump_args *a = st->input;

	switch (key) {
	case 'p':
		/* a second -p replaced the first, and one process was dumped of the two asked for */
		if (a->pid)
			argp_error(st, "dump reads one process: give -p once");
		if (parse_pid(arg, &a->pid))
			argp_error(st, "invalid pid '%s'", arg);
		break;
	case 'j':
		a->json = true;
		break;
	case OPT_ASYNC:
		a->async = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(st, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!a->pid)
			argp_error(st, "-p PID is required");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char dump_doc[] =
	"Print the Python stack of every thread of a running process, once, without stopping it: "
	"thread id and name, on or off CPU, whether it holds the GIL, and its frames, innermost "
	"first. Needs no BPF (root or CAP_SYS_PTRACE suffices)."
	"\vExamples:\n"
	"  pybpfprof dump -p 1234\n"
	"  pybpfprof dump -p 1234 --json | jq .\n"
	"  pybpfprof dump -p 1234 --async";

/* Before 3.11 no task is read; 3.11 to 3.13 only with the C task of the known layout. */
static int async_unsupported(const struct pyproc *p)
{
	if (p->v.major == 3 && p->v.minor >= 11)        /* pure-Python tasks, or another build's layout */
		fprintf(stderr, "pybpfprof: pid %d: --async: not supported for this Python %u.%u: its "
			"asyncio.Task is not the C task of the layout known for %u.%u\n", (int)p->pid,
			p->v.major, p->v.minor, p->v.major, p->v.minor);
	else
		fprintf(stderr, "pybpfprof: pid %d: --async: not supported on Python %u.%u (tasks are "
			"read on 3.11 and later)\n", (int)p->pid, p->v.major, p->v.minor);
	return EXIT_UNSUPPORTED;
}

static int dump_main(int argc, char **argv)
{
	struct argp argp = { dump_opts, dump_parse, NULL, dump_doc, NULL, NULL, NULL };
	struct dump_args a = { 0 };
	struct pyproc *p = NULL;
	char what[32];
	int err, code;

	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a);
	if ((err = pidns_check_proc()) != 0)
		return err;
	err = pyproc_open(a.pid, &(struct pyproc_limits){ 256, 4096, 64 << 20 }, &p);
	if (err) {
		int code = report_attach_error(a.pid, err, p);

		pyproc_close(p);
		return code;
	}
	err = exited_error(a.pid, a.async ? dump_async(p, stdout, a.json) : dump_process(p, stdout, a.json));
	snprintf(what, sizeof(what), "pid %d", (int)a.pid);
	if (a.async && -err == PBP_E_VERSION)
		code = async_unsupported(p);
	else
		code = err ? report_error(what, err) : EXIT_OK;
	pyproc_close(p);
	if (fflush(stdout) != 0)
		return EXIT_IO;
	return code;
}

/* --------------------------------------------------------------- convert */

struct convert_args {
	const char *in, *out, *format, *mode;
	unsigned hz;
};

static const struct argp_option convert_opts[] = {
	{ "input", 'i', "FILE", 0, "Profile to read: collapsed stacks or pprof, gzipped or not (default: stdin)", 0 },
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
	case 'i': a->in = input_path(st, "-i", arg); break;
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
		argp_error(st, "unexpected argument '%s'", arg);
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
	"  pybpfprof convert -i profile.txt -o profile.html\n"
	"  pybpfprof convert -i profile.txt -o profile.pb.gz -m wall";

static int convert_main(int argc, char **argv)
{
	struct argp argp = { convert_opts, convert_parse, NULL, convert_doc, NULL, NULL, NULL };
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

int main(int argc, char **argv)
{
	argp_err_exit_status = EXIT_USAGE;
	if (argc > 1 && strcmp(argv[1], "convert") == 0) {
		argv[1] = "pybpfprof convert";
		return convert_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "diff") == 0) {
		argv[1] = "pybpfprof diff";
		return diff_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "dump") == 0) {
		argv[1] = "pybpfprof dump";
		return dump_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "top") == 0) {
		argv[1] = "pybpfprof top";
		return top_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "agent") == 0) {
		argv[1] = "pybpfprof agent";
		return agent_main(argc - 1, argv + 1);
	}
	/*
	 * A bare first word is a subcommand or a typo of one ("dumpp"): a
	 * command to profile comes after "--", which starts with '-'.
	 */
	if (argc > 1 && argv[1][0] != '-') {
		fprintf(stderr, "pybpfprof: unknown subcommand '%s' (top, dump, convert, diff or agent; a command to "
			"profile goes after --)\n", argv[1]);
		return EXIT_USAGE;
	}
	return record_main(argc, argv);
}
