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
int report_attach_error(pid_t pid, int err, const struct pyproc *p)
{
	if (-err == PBP_E_VERSION && p && p->version[0])
		fprintf(stderr, "pybpfprof: pid %d: unsupported Python version %s (supported: 3.8 to 3.14)\n",
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
	"Print the Python stack of every thread of a running process, once, without stopping it."
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
	err = pyproc_open(a.pid, 256, &p);
	if (err) {
		int code = report_attach_error(a.pid, err, p);

		pyproc_close(p);
		return code;
	}
	err = dump_process(p, stdout, a.json);
	if (err)
		fprintf(stderr, "pybpfprof: pid %d: %s\n", (int)a.pid, pbp_strerror(err));
	pyproc_close(p);
	if (fflush(stdout) != 0)
		return EXIT_IO;
	return exit_code_for(err);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "dump") == 0) {
		argv[1] = "pybpfprof dump";
		return dump_main(argc - 1, argv + 1);
	}
	return record_main(argc, argv);
}
