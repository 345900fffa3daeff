/* SPDX-License-Identifier: MIT */
/*
 * pybpfprof: command line. `pybpfprof [record options] [-- cmd ...]` samples;
 * `pybpfprof dump -p PID` prints every thread's stack once.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyprof.h"

const char *argp_program_version = "pybpfprof " PBP_VERSION;
const char *argp_program_bug_address = "the project's issue tracker";

int exit_code_for(int err)
{
	switch (err < 0 ? -err : err) {
	case PBP_OK: return EXIT_OK;
	case PBP_E_NOENT: return EXIT_NO_PROCESS;
	case PBP_E_NOTPY: return EXIT_NOT_PYTHON;
	case PBP_E_VERSION: return EXIT_UNSUPPORTED;
	case PBP_E_PERM: return EXIT_PERM;
	case PBP_E_GONE: return EXIT_TARGET_GONE;
	case PBP_E_FAULT:
	case PBP_E_CORRUPT: return EXIT_CORRUPT;
	case PBP_E_BPF:
	case PBP_E_OLDKERNEL:
	case PBP_E_NOBTF: return EXIT_NO_BPF;
	default: return EXIT_INTERNAL;
	}
}

int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

/* One line on stderr naming the target and what went wrong; returns the exit code. */
/*
 * A target that exited while it was read fails in whatever way its teardown
 * showed (a zombie has no maps: "not a Python process"; memory unmapped
 * under a read: a fault). Once it is gone or a zombie, that is the error.
 */
static int exited_error(pid_t pid, int err)
{
	char st;

	if (!err || -err == PBP_E_NOENT || -err == PBP_E_PERM || -err == PBP_E_VERSION ||
	    -err == PBP_E_NOMEM)
		return err;
	st = proc_state(pid);
	return st == '?' || st == 'Z' || st == 'X' ? -PBP_E_GONE : err;
}

int report_attach_error(pid_t pid, int err, const struct pyproc *p)
{
	err = exited_error(pid, err);
	if (-err == PBP_E_VERSION && p && p->version[0])
		fprintf(stderr, "pybpfprof: pid %d: unsupported Python version %s (supported: 3.6 to 3.14)\n",
			(int)pid, p->version);
	else
		fprintf(stderr, "pybpfprof: pid %d: %s\n", (int)pid, pbp_strerror(err));
	return exit_code_for(err);
}

/* ------------------------------------------------------------------ dump */

struct dump_args {
	pid_t pid;
	bool json;
};

static const struct argp_option dump_opts[] = {
	{ "pid", 'p', "PID", 0, "Process to read (required)", 0 },
	{ "json", 'j', NULL, 0, "Print JSON instead of text", 0 },
	{ 0 },
};

static error_t dump_parse(int key, char *arg, struct argp_state *st)
{
	struct dump_args *a = st->input;

	switch (key) {
	case 'p':
		if (parse_pid(arg, &a->pid))
			argp_error(st, "invalid pid '%s'", arg);
		break;
	case 'j':
		a->json = true;
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
	"  pybpfprof dump -p 1234 --json | jq .";

static int dump_main(int argc, char **argv)
{
	struct argp argp = { dump_opts, dump_parse, NULL, dump_doc, NULL, NULL, NULL };
	struct dump_args a = { 0 };
	struct pyproc *p = NULL;
	int err;

	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a);
	if ((err = pidns_check_proc()) != 0)
		return err;
	err = pyproc_open(a.pid, &(struct pyproc_limits){ 256, 4096, 64 << 20 }, &p);
	if (err) {
		int code = report_attach_error(a.pid, err, p);

		pyproc_close(p);
		return code;
	}
	err = exited_error(a.pid, dump_process(p, stdout, a.json));
	if (err)
		fprintf(stderr, "pybpfprof: pid %d: %s\n", (int)a.pid, pbp_strerror(err));
	pyproc_close(p);
	if (fflush(stdout) != 0)
		return EXIT_IO;
	return exit_code_for(err);
}

/* --------------------------------------------------------------- convert */

struct convert_args {
	const char *in, *out, *format, *mode;
	unsigned hz;
};

static const struct argp_option convert_opts[] = {
	{ "input", 'i', "FILE", 0, "Collapsed stacks to read (default: stdin)", 0 },
	{ "output", 'o', "FILE", 0, "Where to write (default: stdout)", 0 },
	{ "format", 'f', "FORMAT", 0,
	  "collapsed, html, svg, speedscope, pprof or pstats (default: from the -o extension, "
	  "else collapsed)", 0 },
	{ "frequency", 'F', "HZ", 0, "Rate the profile was taken at, for time units (default 99)", 0 },
	{ "mode", 'm', "MODE", 0, "cpu, wall or gil: what the samples counted (default cpu)", 0 },
	{ 0 },
};

static error_t convert_parse(int key, char *arg, struct argp_state *st)
{
	struct convert_args *a = st->input;
	char *end;

	switch (key) {
	case 'i': a->in = arg; break;
	case 'o': a->out = arg; break;
	case 'f':
		if (format_by_name(arg) < 0)
			argp_error(st, "unknown format '%s'", arg);
		a->format = arg;
		break;
	case 'F':
		a->hz = (unsigned)strtoul(arg, &end, 10);
		if (*end || a->hz < 1 || a->hz > 100000)
			argp_error(st, "invalid frequency '%s'", arg);
		break;
	case 'm':
		if (strcmp(arg, "cpu") && strcmp(arg, "wall") && strcmp(arg, "gil"))
			argp_error(st, "invalid mode '%s' (cpu, wall or gil)", arg);
		a->mode = arg;
		break;
	case ARGP_KEY_ARG:
		argp_error(st, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char convert_doc[] =
	"Render a collapsed-stack profile (what 'pybpfprof -o FILE.txt' writes) in another format. "
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
	FILE *in;
	size_t lineno;
	int fmt, err;

	argp_parse(&argp, argc, argv, 0, NULL, &a);
	fmt = a.format ? format_by_name(a.format) : format_by_path(a.out);
	in = a.in ? fopen(a.in, "re") : stdin;
	if (!in) {
		fprintf(stderr, "pybpfprof: cannot read %s: %s\n", a.in, strerror(errno));
		return EXIT_IO;
	}
	agg = agg_new();
	err = !agg ? -PBP_E_NOMEM : collapsed_read(agg, in, &lineno);
	if (in != stdin)
		fclose(in);
	if (err) {
		/* No aggregate: no line was read, and there is none to name. */
		if (!agg)
			fprintf(stderr, "pybpfprof: out of memory\n");
		else
			fprintf(stderr, "pybpfprof: %s:%zu: not a collapsed-stack line\n",
				a.in ? a.in : "stdin", lineno);
		agg_free(agg);
		return agg ? EXIT_USAGE : EXIT_INTERNAL;
	}
	m = (struct profile_meta){ .mode = a.mode, .hz = a.hz };
	err = profile_write(fmt, agg, &m, a.out);
	agg_free(agg);
	if (err) {
		fprintf(stderr, "pybpfprof: cannot write %s: %s\n", a.out ? a.out : "stdout", strerror(-err));
		return EXIT_IO;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	argp_err_exit_status = EXIT_USAGE;
	if (argc > 1 && strcmp(argv[1], "convert") == 0) {
		argv[1] = "pybpfprof convert";
		return convert_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "dump") == 0) {
		argv[1] = "pybpfprof dump";
		return dump_main(argc - 1, argv + 1);
	}
	return record_main(argc, argv);
}
