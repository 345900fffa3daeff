/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof dump -p PID`: every thread's stack of one process, once, read
 * from its memory (cli/dump.c and cli/dump_async.c print them).
 */
#include <argp.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cli/args.h"
#include "cli/dump.h"
#include "cli/dumpcmd.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "proc/pidns.h"
#include "session/report.h"

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

int dump_main(int argc, char **argv)
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
