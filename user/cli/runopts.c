/* SPDX-License-Identifier: MIT */
/*
 * Targets and sampling options: one table for `pybpfprof` and `pybpfprof
 * agent`, so both take the same filters with the same checks and words.
 */
#include <argp.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cli/args.h"
#include "session/session.h"
#include "cli/runopts.h"
#include "core/errors.h"

enum { OPT_VERBOSE = 1100, OPT_COMM, OPT_CGROUP, OPT_CONTAINER, OPT_EXCLUDE, OPT_MAXPROC,
       OPT_NATIVE_LEAF, OPT_NATIVE, OPT_KERNEL };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Targets:", 1 },
	{ "pid", 'p', "PID[,PID...]", 0,
	  "Profile these processes (repeatable); with -a, only these", 1 },
	{ "all", 'a', NULL, 0,
	  "Profile every Python process on the host, also those started later "
	  "(default frequency 19 Hz)", 1 },
	{ "comm", OPT_COMM, "REGEX", 0, "With -a: only processes whose comm matches", 1 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "With -a: only processes in this cgroup or below", 1 },
	{ "container", OPT_CONTAINER, "ID", 0,
	  "With -a: only this container (id or a prefix of at least 4 characters)", 1 },
	{ "exclude-pid", OPT_EXCLUDE, "PID[,PID...]", 0, "With -a: never these processes", 1 },
	{ "max-processes", OPT_MAXPROC, "N", 0,
	  "With -a: profile at most N processes at once (default 256); with -a -p, of those "
	  "given", 1 },
	{ NULL, 0, NULL, 0, "Sampling:", 2 },
	{ "mode", 'm', "MODE", 0,
	  "What a sample counts: cpu (threads on a CPU; default), wall (every thread at every "
	  "tick), gil (the thread holding the GIL)", 2 },
	{ "frequency", 'F', "HZ", 0,
	  "Samples per second: of CPU time per thread in cpu mode, ticks in wall and gil modes "
	  "(default 99; 19 with -a)", 2 },
	{ "duration", 'd', "SECONDS", 0,
	  "Stop after this long (default: Ctrl-C, SIGTERM, SIGHUP, or every target exited); "
	  "a command launched with -- is stopped then too", 2 },
	{ "native-leaf", OPT_NATIVE_LEAF, NULL, 0,
	  "End samples of threads on a CPU without the GIL with the C function they were in: "
	  "'[native] FUNCTION (LIBRARY)'", 2 },
	{ "native", OPT_NATIVE, "HOW", OPTION_ARG_OPTIONAL,
	  "Whole native stacks, woven with the Python frames in call order. dwarf (the default): "
	  "the kernel copies the top 8 KiB of each sample's user stack, unwound from .eh_frame "
	  "(x86-64); fp: the kernel walks frame pointers (cheaper; right only through code built "
	  "with them)", 2 },
	{ "kernel", OPT_KERNEL, NULL, 0,
	  "End samples of threads in the kernel (a system call, a fault, asleep) with their kernel "
	  "stack: '[kernel] FUNCTION', named from /proc/kallsyms", 2 },
	{ "verbose", OPT_VERBOSE, NULL, 0, "Show libbpf's messages (when the BPF side fails to load)", 2 },
	{ 0 },
};

/*
 * "PID[,PID...]": an empty item ("", "1,,2", "1,") is a mistake too, not
 * nothing. arg is left whole, for the error message.
 */
static int add_pids(pid_t *list, int *n, const char *arg)
{
	for (;;) {
		size_t len = strcspn(arg, ",");
		char tok[16];
		pid_t pid;

		if (len >= sizeof(tok) || *n >= MAX_PIDS)
			return -PBP_E_INVAL;
		memcpy(tok, arg, len);
		tok[len] = '\0';
		if (parse_pid(tok, &pid))
			return -PBP_E_INVAL;
		list[(*n)++] = pid;
		if (!arg[len])
			return 0;
		arg += len + 1;
	}
}

static error_t parse_targets(int key, char *arg, struct argp_state *st, struct session_opts *r)
{
	unsigned long long n;

	switch (key) {
	case 'p':
		if (add_pids(r->pids, &r->npids, arg))
			argp_error(st, "invalid pid list '%s' (comma-separated pids, at most %d)", arg, MAX_PIDS);
		break;
	case 'a': r->all = true; break;
	case OPT_COMM:
		if (r->comm_re)
			regfree(&r->comm_regex);
		r->comm_re = NULL;
		if (regcomp(&r->comm_regex, arg, REG_EXTENDED | REG_NOSUB) != 0)
			argp_error(st, "invalid regular expression '%s'", arg);
		r->comm_re = arg;
		break;
	case OPT_CGROUP: r->cgroup = arg; break;
	case OPT_CONTAINER:
		if (strlen(arg) < 4)
			argp_error(st, "--container needs at least 4 characters of the id");
		r->container = arg;
		break;
	case OPT_EXCLUDE:
		if (add_pids(r->excluded, &r->nexcluded, arg))
			argp_error(st, "invalid pid list '%s' (comma-separated pids, at most %d)", arg, MAX_PIDS);
		break;
	case OPT_MAXPROC:
		if (parse_uint(arg, 1, 4096, &n))
			argp_error(st, "invalid --max-processes '%s' (1 to 4096)", arg);
		r->max_processes = (int)n;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *st)
{
	struct session_opts *r = st->input;
	unsigned long long n;
	int mode;

	switch (key) {
	case 'm':
		mode = mode_by_name(arg);
		if (mode < 0)
			argp_error(st, "invalid mode '%s' (cpu, wall or gil)", arg);
		r->sampling.mode = (enum pbp_mode)mode;
		break;
	case 'F':
		r->hz_given = true;
		if (parse_uint(arg, 1, 100000, &n))
			argp_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
		r->sampling.hz = (unsigned)n;
		break;
	case 'd':
		if (parse_seconds(arg, MIN_DURATION, MAX_DURATION, &r->duration))
			argp_error(st, "invalid duration '%s' (%g to %.0f seconds)", arg, MIN_DURATION,
				   MAX_DURATION);
		break;
	case OPT_VERBOSE: r->verbose = true; break;
	case OPT_NATIVE_LEAF: r->sampling.native_leaf = true; break;
	case OPT_NATIVE:
		/* As perf's --call-graph: dwarf unwinds a copy of the stack, fp trusts frame pointers. */
		if (arg && strcmp(arg, "dwarf") != 0 && strcmp(arg, "fp") != 0)
			argp_error(st, "invalid --native '%s' (dwarf or fp)", arg);
		r->sampling.native = true;
		r->sampling.native_fp = arg && strcmp(arg, "fp") == 0;
		break;
	case OPT_KERNEL: r->sampling.kernel = true; break;
	case ARGP_KEY_END:
		if (!r->all && (r->comm_re || r->cgroup || r->container || r->nexcluded))
			argp_error(st, "--comm, --cgroup, --container and --exclude-pid go with -a");
		if (r->all && !r->hz_given)
			r->sampling.hz = HOST_HZ;
		break;
	default:
		return parse_targets(key, arg, st, r);
	}
	return 0;
}

void runopts_end_targets(struct argp_state *st, struct session_opts *r)
{
	if (!r->npids && !r->cmd && !r->all)
		argp_error(st, "give -p PID, -a, or a command after --");
	if ((r->npids || r->all) && r->cmd)
		argp_error(st, "-p and -a cannot be used with a command");
	if (r->all && r->subprocesses)
		argp_error(st, "--subprocesses and --no-subprocesses go with -p or a command");
	if (r->npids && r->subprocesses < 0)
		argp_error(st, "--no-subprocesses goes with a command (-p follows none by default)");
	/* With -a, -p only filters the host's processes, and the limit picks among them. */
	if (!r->all && r->max_processes && r->max_processes < r->npids)
		argp_error(st, "--max-processes %d is fewer than the %d processes given with -p",
			   r->max_processes, r->npids);
	r->follow = r->cmd ? r->subprocesses >= 0 : r->subprocesses > 0;
}

const struct argp runopts_argp = { opts, parse_opt, NULL, NULL, NULL, NULL, NULL };
