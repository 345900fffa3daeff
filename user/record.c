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
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyprof.h"

#define MAX_PIDS 1024           /* -p lists and --exclude-pid lists */
#define DEFAULT_MAX_PROCESSES 256
#define HOST_HZ 19              /* -a default: a whole host, every process */
#define MAX_SKIPPED 4096
#define MAX_PENDING 1024
#define MAX_DISCOVER 65536
/* -p: a few processes, generous caches; -a: many, each kept small. */
static const struct pyproc_limits target_limits = { 1024, 4096, 64 << 20 };
static const struct pyproc_limits host_limits = { 64, 1024, 4 << 20 };
#define LAUNCH_WAIT_NS (10 * 1000000000ull)
#define LAUNCH_POLL_MAX_US 20000
#define STOP_WAIT_MS 2000       /* a command we could not profile: SIGTERM, then SIGKILL */
#define MAX_LOCS PBP_MAX_LOCS
#define MAX_CATCH_UP 10         /* ticks run at once when the loop fell behind */
/*
 * Changing a perf event's period restarts its timer and drops the part of a
 * period already run: re-draw seldom enough that this costs < 1% of samples.
 */
#define JITTER_MIN_NS 1000000000ull
/*
 * Threads are found as they start (a kernel event, wall and gil modes) or
 * when first sampled; the periodic rescan is a safety net, and refreshes
 * names set after a thread started. A new thread's Python state may be
 * bound a little after the kernel reports it: looked for twice.
 */
#define RESCAN_EVERY_NS 5000000000ull
#define NEW_THREAD_SOON_NS 20000000ull
#define NEW_THREAD_LATER_NS 300000000ull
/*
 * The loop sleeps, then takes every sample the ring buffer holds. Being
 * woken for each sample instead costs a context switch per sample, more
 * than naming it, and on a busy machine preempts the sampled thread in step
 * with the sampling clock (bench/RESULTS.md). A wakeup costs about as much
 * as naming 10 samples, so it waits for many; process and thread events
 * still wake it at once, and so does a sample ring a quarter full (on a
 * host with many CPUs, before BATCH_SAMPLES each; sampler.c).
 */
#define BATCH_NS 10000000ull
#define BATCH_MAX_NS 1000000000ull
#define BATCH_SAMPLES 100          /* per CPU, and so per busy thread */
/*
 * Exits arrive as kernel events (on_proc_event); /proc is read for every
 * target as a safety net only, seldom: with -a a host has many targets.
 */
#define ALIVE_EVERY_NS 5000000000ull
#define JITTER_PERIODS 64
/* -d: what the clock can time (a deadline in ns) and the loop can honour. */
#define MIN_DURATION 0.001
#define MAX_DURATION 31536000.0    /* a year */
/* An achieved rate below this share of the asked one is reported. */
#define RATE_SHORT 0.8

/* A process -a could not profile: reported once in the summary. */
struct skipped {
	pid_t pid;
	int err;
	char what[96];          /* comm, and the version when that was the reason */
};

/* A -p or launched target that exec'd: when, and whether it was profiled again. */
#define MAX_EXEC_NOTES 64
struct exec_note {
	pid_t pid;
	uint64_t at_ns, back_ns;        /* back_ns 0: not profiled again (yet) */
	int err;                        /* why not, once given up */
	char version[32];               /* the new interpreter's */
};

/* An exec'd process that is not (yet) Python: it may load libpython later. */
struct pending {
	pid_t pid;
	int tries;
	uint64_t next_ns;
};

/*
 * The end-of-run figures: the human summary (default), with the cache and
 * read statistics (text), as one JSON line instead (json), or none.
 */
enum stats_form { STATS_SUMMARY, STATS_TEXT, STATS_JSON, STATS_NONE };

struct record {
	/* options */
	pid_t pids[MAX_PIDS], excluded[MAX_PIDS];
	int npids, nexcluded;
	bool all, hz_given;
	const char *comm_re, *cgroup, *container;
	regex_t comm_regex;
	int max_processes;
	double duration;
	const char *outpath;
	struct output out;      /* opened before sampling starts */
	int format;
	enum stats_form stats;
	bool quiet, verbose;
	char **cmd;
	/* state */
	struct collector c;
	pid_t child;
	int child_status;       /* as waitpid gives it, once child_reaped */
	bool child_reaped;
	struct target *targets; /* max_processes slots; t->p == NULL is free */
	int ntargets;           /* slots in use or used, high-water mark */
	struct skipped *skipped;
	int nskipped;
	struct pending pending[MAX_PENDING];
	int npending;
	bool exited;            /* a target exited since the last any_alive() */
	struct exec_note execs[MAX_EXEC_NOTES];
	int nexecs;
	uint64_t start_ns, end_ns, start_unix_ns;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------- options */

enum { OPT_STATS = 1000, OPT_VERBOSE, OPT_STATUS, OPT_COMM, OPT_CGROUP, OPT_CONTAINER,
       OPT_EXCLUDE, OPT_MAXPROC };

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
	  "With -a: profile at most N processes at once (default 256)", 1 },
	{ NULL, 0, NULL, 0, "Sampling:", 2 },
	{ "mode", 'm', "MODE", 0,
	  "What a sample counts: cpu (threads on a CPU; default), wall (every thread at every "
	  "tick), gil (the thread holding the GIL)", 2 },
	{ "frequency", 'F', "HZ", 0,
	  "Samples per second: of CPU time per thread in cpu mode, ticks in wall and gil modes "
	  "(default 99; 19 with -a)", 2 },
	{ "duration", 'd', "SECONDS", 0,
	  "Stop after this long (default: Ctrl-C, SIGTERM, SIGHUP, or every target exited)", 2 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "output", 'o', "FILE", 0, "Write the profile here (default: stdout)", 3 },
	{ "format", 'f', "FORMAT", 0,
	  "collapsed, html, svg, speedscope, pprof or pstats (default: from the -o extension, "
	  "else collapsed)", 3 },
	{ "threads", 't', NULL, 0, "Add a root frame per thread: 'thread TID name'", 3 },
	{ "status", OPT_STATUS, NULL, 0,
	  "Add a leaf frame with the thread's status: [running], [native, no GIL], [runnable], "
	  "[gil wait], [sleeping], [disk]", 3 },
	{ "stats", OPT_STATS, "FORM", OPTION_ARG_OPTIONAL,
	  "End-of-run figures on stderr: text (the summary and cache and read statistics; "
	  "--stats alone), json (all of them as one JSON line, no summary or table), "
	  "none (no summary or table; warnings stay)", 3 },
	{ "quiet", 'q', NULL, 0, "No live line, summary or top-functions table on stderr", 3 },
	{ "verbose", OPT_VERBOSE, NULL, 0, "Show libbpf's messages (when the BPF side fails to load)", 3 },
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
			return -1;
		memcpy(tok, arg, len);
		tok[len] = '\0';
		if (parse_pid(tok, &pid))
			return -1;
		list[(*n)++] = pid;
		if (!arg[len])
			return 0;
		arg += len + 1;
	}
}

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
	unsigned long long n;
	int mode, form;

	switch (key) {
	case 'p':
		if (add_pids(r->pids, &r->npids, arg))
			argp_error(st, "invalid pid list '%s' (comma-separated pids, at most %d)", arg, MAX_PIDS);
		break;
	case 'a': r->all = true; break;
	case OPT_COMM:
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
	case 'm':
		mode = mode_by_name(arg);
		if (mode < 0)
			argp_error(st, "invalid mode '%s' (cpu, wall or gil)", arg);
		r->c.o.mode = (enum pbp_mode)mode;
		break;
	case 'f':
		r->format = format_by_name(arg);
		if (r->format < 0)
			argp_error(st, "unknown format '%s'", arg);
		break;
	case 'F':
		r->hz_given = true;
		if (parse_uint(arg, 1, 100000, &n))
			argp_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
		r->c.o.hz = (unsigned)n;
		break;
	case 'd':
		if (parse_seconds(arg, MIN_DURATION, MAX_DURATION, &r->duration))
			argp_error(st, "invalid duration '%s' (%g to %.0f seconds)", arg, MIN_DURATION,
				   MAX_DURATION);
		break;
	case 'o': r->outpath = arg; break;
	case 't': r->c.o.per_thread = true; break;
	case OPT_STATUS: r->c.o.status = true; break;
	case 'q': r->quiet = true; break;
	case OPT_STATS:
		form = stats_by_name(arg);
		if (form < 0)
			argp_error(st, "invalid --stats '%s' (text, json or none)", arg);
		r->stats = (enum stats_form)form;
		break;
	case OPT_VERBOSE: r->verbose = true; break;
	case ARGP_KEY_ARGS:
		r->cmd = st->argv + st->next;
		break;
	case ARGP_KEY_ARG:
		return ARGP_ERR_UNKNOWN;
	case ARGP_KEY_END:
		if (!r->npids && !r->cmd && !r->all)
			argp_error(st, "give -p PID, -a, or a command after --");
		if ((r->npids || r->all) && r->cmd)
			argp_error(st, "-p and -a cannot be used with a command");
		if (!r->all && (r->comm_re || r->cgroup || r->container || r->nexcluded))
			argp_error(st, "--comm, --cgroup, --container and --exclude-pid go with -a");
		if (r->all && !r->hz_given)
			r->c.o.hz = HOST_HZ;
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
	"any of them + .gz: gzipped (.gz alone: collapsed).\n\n"
	"Subcommands: 'pybpfprof dump -p PID' prints every thread's stack once; "
	"'pybpfprof convert' turns collapsed stacks into another format. "
	"See 'pybpfprof dump --help', 'pybpfprof convert --help' and man pybpfprof."
	"\vExamples:\n"
	"  sudo pybpfprof -p 1234 -d 10 -o profile.html\n"
	"  sudo pybpfprof -p 1234 -F 99 -d 10 -o profile.txt\n"
	"  sudo pybpfprof -o app.txt -- python3 app.py\n"
	"  sudo pybpfprof -p 1234 -m wall --status -t -o wall.txt\n"
	"  sudo pybpfprof -a -d 60 -o host.pb.gz\n"
	"  flamegraph.pl profile.txt > profile.svg";

/* ------------------------------------------------------------- targets */

static struct target *target_of(struct record *r, pid_t pid)
{
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p && r->targets[i].pid == pid)
			return &r->targets[i];
	return NULL;
}

static int live_targets(const struct record *r)
{
	int n = 0;

	for (int i = 0; i < r->ntargets; i++)
		n += r->targets[i].p && r->targets[i].alive;
	return n;
}

/* A zombie has exited: its parent just has not reaped it yet. */
static bool alive(pid_t pid)
{
	char st = proc_state(pid);

	return st != '?' && st != 'Z' && st != 'X';
}

/* Whole-host runs (and several -p) name the process at the root of each stack. */
static void label_target(struct record *r, struct target *t)
{
	struct cgroup_info cg;
	char cmd[256], label[320];

	memset(&cg, 0, sizeof(cg));
	cgroup_read(t->pid, &cg);
	agg_set_process(r->c.agg, (uint32_t)t->pid, t->p->tids ? (uint32_t)t->p->ns_pid : 0, t->p->version,
			cg.container_id, cg.pod_uid);
	if (!r->all && r->npids < 2)
		return;
	if (proc_cmdline(t->pid, cmd, sizeof(cmd)) != 0 || !cmd[0])
		proc_thread_comm(t->pid, t->pid, cmd, sizeof(cmd));
	root_label(label, sizeof(label), "process", (uint32_t)t->pid, t->p->tids ? (uint32_t)t->p->ns_pid : 0,
		   cmd);
	utf8_scrub(label);      /* a command line is any bytes; profiles are UTF-8 */
	t->proc_loc = agg_loc(r->c.agg, label, NULL, -1, LOC_PROCESS);
}

static int start_target(struct record *r, struct target *t)
{
	int err = target_init(&r->c, t);

	if (!err)
		label_target(r, t);
	return err;
}

/* Forget a target: its samples stay in the profile, its memory goes. */
static void drop_target(struct record *r, struct target *t)
{
	if (!t->p)
		return;
	sampler_del_proc(r->c.smp, t->pid);
	target_fini(&r->c, t);
}

static bool was_skipped(const struct record *r, pid_t pid)
{
	for (int i = 0; i < r->nskipped; i++)
		if (r->skipped[i].pid == pid)
			return true;
	return false;
}

/* A Python process -a could not profile: said once, in the summary. */
static void skip(struct record *r, pid_t pid, int err, const struct pyproc *p)
{
	struct skipped *k;
	char comm[32];

	if (r->nskipped >= MAX_SKIPPED || was_skipped(r, pid))
		return;
	k = &r->skipped[r->nskipped++];
	k->pid = pid;
	k->err = err;
	proc_thread_comm(pid, pid, comm, sizeof(comm));
	if (-err == PBP_E_VERSION && p && p->version[0])
		snprintf(k->what, sizeof(k->what), "%s, Python %s", comm, p->version);
	else
		snprintf(k->what, sizeof(k->what), "%s", comm);
}

static bool wanted(struct record *r, pid_t pid)
{
	struct proc_filter f = {
		.comm_re = r->comm_re ? &r->comm_regex : NULL,
		.cgroup_prefix = r->cgroup,
		.container_prefix = r->container,
		.exclude = r->excluded,
		.nexclude = (size_t)r->nexcluded,
		.only = r->npids ? r->pids : NULL,
		.nonly = (size_t)r->npids,
	};
	struct cgroup_info cg;
	char comm[32];

	if (pid == getpid())
		return false;
	memset(&cg, 0, sizeof(cg));
	if ((r->cgroup || r->container) && cgroup_read(pid, &cg) != 0)
		return false;
	proc_thread_comm(pid, pid, comm, sizeof(comm));
	return proc_filter_match(&f, pid, comm, &cg);
}

static const uint64_t recheck_ms[] = { 20, 200, 1000, 5000 };
/*
 * A target that exec'd is not sampled until its new program is known: its
 * interpreter (mapped at once if static, by the loader if not) is looked
 * for at once and then often, as for a launched command.
 */
static const uint64_t reexec_ms[] = { 1, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000 };

/* Look at pid again after the next delay; false: that was the last one, it is not Python. */
static bool queue_pending(struct record *r, pid_t pid, int tries)
{
	const uint64_t *ms = r->all ? recheck_ms : reexec_ms;
	int n = r->all ? (int)(sizeof(recheck_ms) / sizeof(*ms)) : (int)(sizeof(reexec_ms) / sizeof(*ms));
	struct pending *p;

	if (r->npending >= MAX_PENDING || tries >= n)
		return false;
	p = &r->pending[r->npending++];
	p->pid = pid;
	p->tries = tries;
	p->next_ns = now_ns() + ms[tries] * 1000000ull;
	return true;
}

static struct exec_note *exec_note_of(struct record *r, pid_t pid)
{
	for (int i = r->nexecs; i-- > 0;)
		if (r->execs[i].pid == pid)
			return &r->execs[i];
	return NULL;
}

static void note_exec(struct record *r, pid_t pid)
{
	struct exec_note *n;

	if (r->nexecs >= MAX_EXEC_NOTES)
		return;
	n = &r->execs[r->nexecs++];
	memset(n, 0, sizeof(*n));
	n->pid = pid;
	n->at_ns = now_ns();
}

/* The end of the search for a target's new program: profiled again (err 0), or why not. */
static void exec_done(struct record *r, pid_t pid, int err, const struct pyproc *p)
{
	struct exec_note *n = exec_note_of(r, pid);

	if (!n || n->back_ns || n->err)
		return;
	n->err = err;
	if (!err)
		n->back_ns = now_ns();
	if (p && p->version[0])
		snprintf(n->version, sizeof(n->version), "%s", p->version);
}

/* A free slot of the target table given to p as pid; NULL when --max-processes are all taken. */
static struct target *place_target(struct record *r, pid_t pid, struct pyproc *p)
{
	struct target *t = NULL;

	for (int i = 0; i < r->max_processes && !t; i++)
		if (!r->targets[i].p)
			t = &r->targets[i];
	if (!t)
		return NULL;
	t->pid = pid;
	t->p = p;
	if (t - r->targets >= r->ntargets)
		r->ntargets = (int)(t - r->targets) + 1;
	return t;
}

/* -p or launch mode: a target that exec'd, profiled again once its new program is Python. */
static bool reattach(struct record *r, pid_t pid)
{
	struct pyproc *p = NULL;
	struct target *t = NULL;
	int err = pyproc_open(pid, &target_limits, &p);

	if (err == -PBP_E_NOTPY || err == -PBP_E_FAULT) {
		pyproc_close(p);
		return false;   /* not (yet) Python */
	}
	if (!err && !(t = place_target(r, pid, p)))
		err = -PBP_E_LIMIT;
	exec_done(r, pid, err, p);
	if (err) {
		pyproc_close(p);
		return true;
	}
	if (start_target(r, t) != 0) {
		struct exec_note *n = exec_note_of(r, pid);

		if (n)
			n->back_ns = 0, n->err = -PBP_E_BPF;
		drop_target(r, t);
	}
	return true;
}

/*
 * -a: profile pid if it is a Python process the filters let through.
 * Returns false when it is not Python (yet): just exec'd, or an embedding
 * program that loads libpython later.
 */
static bool consider(struct record *r, pid_t pid)
{
	struct pyproc *p = NULL;
	struct target *t = NULL;
	int err;

	if (target_of(r, pid) || was_skipped(r, pid) || !wanted(r, pid))
		return true;
	err = pyproc_open(pid, &host_limits, &p);
	if (err == -PBP_E_NOTPY || err == -PBP_E_FAULT) {
		pyproc_close(p);
		return false;
	}
	if (err && err != -PBP_E_NOENT && err != -PBP_E_GONE)
		skip(r, pid, err, p);
	if (!err && !(t = place_target(r, pid, p)))
		skip(r, pid, -PBP_E_LIMIT, p);
	if (err || !t) {
		pyproc_close(p);
		return true;
	}
	if (start_target(r, t) != 0) {
		skip(r, pid, -PBP_E_BPF, p);
		drop_target(r, t);
	}
	return true;
}

static void discover(struct record *r)
{
	pid_t *pids = malloc(sizeof(*pids) * MAX_DISCOVER);
	size_t n = 0;

	if (pids && discover_pythons(pids, MAX_DISCOVER, &n) >= 0)   /* 1: more than fit */
		for (size_t i = 0; i < n; i++)
			consider(r, pids[i]);
	free(pids);
}

static void run_pending(struct record *r, uint64_t now)
{
	for (int i = 0; i < r->npending;) {
		struct pending p = r->pending[i];

		if (p.next_ns > now) {
			i++;
			continue;
		}
		r->pending[i] = r->pending[--r->npending];
		if (r->all) {
			if (alive(p.pid) && !consider(r, p.pid))
				queue_pending(r, p.pid, p.tries + 1);
		} else if (!alive(p.pid)) {
			exec_done(r, p.pid, -PBP_E_NOTPY, NULL);    /* it ended as what it was */
		} else if (!reattach(r, p.pid) && !queue_pending(r, p.pid, p.tries + 1)) {
			exec_done(r, p.pid, -PBP_E_NOTPY, NULL);
		}
	}
}

static void on_sample(void *ctx, const struct pbp_sample *ks)
{
	struct record *r = ctx;
	struct target *t = target_of(r, (pid_t)ks->tgid);

	if (t && t->alive)
		target_on_sample(&r->c, t, ks);
}

static void on_proc_event(void *ctx, uint32_t kind, pid_t pid)
{
	struct record *r = ctx;
	struct target *t;

	if (kind == PBP_EV_EXEC) {
		/* An exec replaces the program: a target that execs is a new process to us. */
		if ((t = target_of(r, pid)) != NULL)
			drop_target(r, t);
		if (r->all) {
			queue_pending(r, pid, 0);
		} else if (t) {
			note_exec(r, pid);
			if (!reattach(r, pid))
				queue_pending(r, pid, 0);
		}
	} else if (kind == PBP_EV_EXIT && (t = target_of(r, pid)) != NULL) {
		t->alive = false;
		r->exited = true;
	} else if (kind == PBP_EV_THREAD && (t = target_of(r, pid)) != NULL) {
		uint64_t now = now_ns();

		if (!t->rescan_soon)
			t->rescan_soon = now + NEW_THREAD_SOON_NS;
		t->rescan_later = now + NEW_THREAD_LATER_NS;
	}
}

/* ------------------------------------------------------------- launch */

/* Reap the launched command, keeping its status for our own exit code. */
static bool reap_child(struct record *r, int flags)
{
	int status;

	if (r->child <= 0 || waitpid(r->child, &status, flags) != r->child)
		return false;
	r->child = 0;
	r->child_status = status;
	r->child_reaped = true;
	return true;
}

static void drop_to_invoking_user(void)
{
	uid_t uid;
	gid_t gid;

	sudo_ids(&uid, &gid);
	if (uid == (uid_t)-1)
		return;
	if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
		fprintf(stderr, "pybpfprof: cannot drop to uid %d: %s\n", (int)uid, strerror(errno));
		_exit(126);
	}
}

/* Fork the command stopped before exec; it runs once the sampler is ready. */
static int launch(struct record *r, int *go_fd)
{
	pid_t parent = getpid();
	int pipefd[2];
	char c;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -errno;
	r->child = fork();
	if (r->child < 0)
		return -errno;
	if (r->child == 0) {
		close(pipefd[1]);
		signal(SIGPIPE, SIG_DFL);       /* ignored here (install_signals), not for the command */
		if (read(pipefd[0], &c, 1) != 1)
			_exit(125);     /* the profiler died before it was ready */
		drop_to_invoking_user();
		privs_for_command();
		/*
		 * However the profiler ends, SIGKILL included, the command gets
		 * SIGTERM as on Ctrl-C or SIGTERM: it never runs on unprofiled.
		 * Set after the uid change, which clears it.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
			_exit(125);
		execvp(r->cmd[0], r->cmd);
		fprintf(stderr, "pybpfprof: cannot run '%s': %s\n", r->cmd[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[0]);
	*go_fd = pipefd[1];
	return 0;
}

/* The launched command becomes a target once its interpreter is mapped. */
static int attach_child(struct record *r)
{
	uint64_t deadline = now_ns() + LAUNCH_WAIT_NS;
	struct target *t = &r->targets[0];
	useconds_t wait_us = 200;
	int err, status;

	for (;;) {
		err = pyproc_open(r->child, &target_limits, &t->p);
		if (!err)
			break;
		pyproc_close(t->p);
		t->p = NULL;
		if (reap_child(r, WNOHANG)) {
			status = r->child_status;
			/* 125-127: the child already said why it could not run the command. */
			if (WIFEXITED(status) && WEXITSTATUS(status) >= 125)
				return -PBP_E_CHILD;
			return -PBP_E_NOTPY;
		}
		if ((err != -PBP_E_NOTPY && err != -PBP_E_FAULT) || now_ns() > deadline)
			return err;
		/* An interpreter maps itself within milliseconds: look often first, then seldom. */
		usleep(wait_us);
		wait_us = wait_us < LAUNCH_POLL_MAX_US / 2 ? wait_us * 2 : LAUNCH_POLL_MAX_US;
	}
	t->pid = r->child;
	r->ntargets = 1;
	return start_target(r, t);
}

/* ------------------------------------------------------------- run */

static int open_targets(struct record *r)
{
	if (r->all)
		return 0;   /* -p is a filter then; discover() finds the processes */
	for (int i = 0; i < r->npids; i++) {
		struct target *t = &r->targets[r->ntargets];
		int err = pyproc_open(r->pids[i], &target_limits, &t->p);

		if (err) {
			int code = report_attach_error(r->pids[i], err, t->p);

			pyproc_close(t->p);
			t->p = NULL;
			return code;
		}
		t->pid = r->pids[i];
		r->ntargets++;
	}
	return 0;
}

/* Notice targets that exited (the kernel says so too, but a zombie is not reaped at once). */
static int any_alive(struct record *r)
{
	reap_child(r, WNOHANG);
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];
		bool up = t->pid == r->child ? r->child != 0 : alive(t->pid);

		if (t->p && (!t->alive || !up)) {
			if (r->all)
				drop_target(r, t);   /* a host has many: free them as they go */
			else if (t->alive)
				sampler_del_proc(r->c.smp, t->pid), t->alive = false;
		}
	}
	/* A target that exec'd counts while its new program is looked at. */
	return live_targets(r) + (r->all ? 0 : r->npending);
}

/*
 * The live line is rewritten in place: erased with ESC [ K where the
 * terminal knows it, else (TERM unset, empty or "dumb": Emacs shells, some
 * CI logs) overwritten with spaces, no escape sequence at all.
 */
#define LIVE_WIDTH 72

static bool term_erases(void)
{
	const char *t = getenv("TERM");

	return t && t[0] && strcmp(t, "dumb") != 0;
}

static void live_clear(void)
{
	if (term_erases())
		fputs("\r\033[K", stderr);
	else
		fprintf(stderr, "\r%*s\r", LIVE_WIDTH, "");
}

static void live_line(struct record *r, uint64_t now)
{
	uint64_t st[PBP_STAT__COUNT];
	double secs = (double)(now - r->start_ns) / 1e9;
	uint64_t n = agg_total(r->c.agg);
	char line[160];

	sampler_stats(r->c.smp, st);
	snprintf(line, sizeof(line), "pybpfprof: %.0f s, %llu samples, %.0f/s, %llu lost", secs,
		 (unsigned long long)n, secs > 0 ? (double)n / secs : 0.0,
		 (unsigned long long)st[PBP_STAT_LOST]);
	if (term_erases())
		fprintf(stderr, "\r\033[K%s", line);
	else
		fprintf(stderr, "\r%-*s", LIVE_WIDTH, line);
}

/* wall and gil modes: ticks at hz on the monotonic clock, caught up if the loop fell behind. */
static void run_ticks(struct record *r, uint64_t now, uint64_t *next_tick)
{
	uint64_t period = 1000000000ull / r->c.o.hz;
	int done = 0;

	while (*next_tick <= now) {
		if (done++ < MAX_CATCH_UP) {
			for (int i = 0; i < r->ntargets; i++)
				target_tick(&r->c, &r->targets[i], *next_tick);
			r->c.ticks++;
		} else {
			r->c.late_ticks++;
		}
		*next_tick += period;
	}
}

static void rescan_due(struct record *r, uint64_t now, bool all)
{
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];
		bool due = all;

		if (!t->alive)
			continue;
		if (t->rescan_soon && now >= t->rescan_soon) {
			t->rescan_soon = 0;
			due = true;
		}
		if (t->rescan_later && now >= t->rescan_later) {
			t->rescan_later = 0;
			due = true;
		}
		if (due)
			target_rescan(&r->c, t, false);
	}
}

static uint64_t jitter_every(unsigned hz)
{
	uint64_t n = JITTER_PERIODS * (1000000000ull / hz);

	return n > JITTER_MIN_NS ? n : JITTER_MIN_NS;
}

static uint64_t earlier(uint64_t a, uint64_t b)
{
	return b && b < a ? b : a;
}

/* The next instant something other than samples needs the loop. */
static uint64_t next_due(const struct record *r, uint64_t due)
{
	for (int i = 0; i < r->npending; i++)
		due = earlier(due, r->pending[i].next_ns);
	for (int i = 0; i < r->ntargets; i++) {
		due = earlier(due, r->targets[i].rescan_soon);
		due = earlier(due, r->targets[i].rescan_later);
	}
	return due;
}

static void loop(struct record *r)
{
	bool tty = !r->quiet && isatty(STDERR_FILENO);
	bool ticking = r->c.o.mode != MODE_CPU;
	uint64_t deadline = r->duration > 0 ? r->start_ns + (uint64_t)(r->duration * 1e9) : 0;
	uint64_t next_live = r->start_ns + 1000000000ull;
	uint64_t next_tick = r->start_ns + 1000000000ull / r->c.o.hz;
	uint64_t next_jitter = r->start_ns + jitter_every(r->c.o.hz);
	uint64_t next_rescan = r->start_ns + RESCAN_EVERY_NS;
	uint64_t next_alive = 0;

	/* Samples wait in the ring buffer: a few per CPU, within [BATCH_NS, BATCH_MAX_NS]. */
	uint64_t batch = BATCH_SAMPLES * (1000000000ull / r->c.o.hz);

	batch = batch < BATCH_NS ? BATCH_NS : batch > BATCH_MAX_NS ? BATCH_MAX_NS : batch;
	while (!stop_signal) {
		uint64_t now = now_ns();
		uint64_t due = now + batch;

		due = earlier(due, ticking ? next_tick : 0);
		due = earlier(due, deadline);
		due = earlier(due, next_jitter);
		due = earlier(due, next_rescan);
		due = earlier(due, next_alive);
		due = earlier(due, tty ? next_live : 0);
		due = next_due(r, due);
		if (due > now)
			sampler_wait(r->c.smp, due - now);
		else
			sampler_drain(r->c.smp);
		now = now_ns();
		if (deadline && now >= deadline)
			break;
		if (ticking)
			run_ticks(r, now, &next_tick);
		if (now >= next_alive || r->exited) {
			r->exited = false;
			if (!any_alive(r) && !r->all)
				break;
			next_alive = now + ALIVE_EVERY_NS;
		}
		run_pending(r, now);
		rescan_due(r, now, now >= next_rescan);
		if (now >= next_rescan)
			next_rescan = now + RESCAN_EVERY_NS;
		if (now >= next_jitter) {
			sampler_jitter(r->c.smp);
			next_jitter = now + jitter_every(r->c.o.hz);
		}
		if (tty && now >= next_live) {
			live_line(r, now);
			next_live += 1000000000ull;
		}
	}
	/* Samples still in the ring buffer belong to the run. */
	while (sampler_drain(r->c.smp) > 0)
		;
	r->end_ns = now_ns();
	if (tty)
		live_clear();
}

/* Why the rate is lower than asked, or NULL. */
static const char *cap_reason(const struct sampler_limit *l, char *buf, size_t n)
{
	if (l->why == CAP_KERNEL)
		snprintf(buf, n, "kernel.perf_event_max_sample_rate is %u", l->max_rate);
	else if (l->why == CAP_COST)
		snprintf(buf, n, "one sample interrupt costs %.1f us on this host, and the "
			 "interrupts may take %g%% of each CPU (half of perf_cpu_time_max_percent)",
			 l->irq_ns / 1000.0, l->budget_pct / 2.0);
	else
		return NULL;
	return buf;
}

/* The rate the sampler runs at; said at once when lower than asked. */
static unsigned rate_limited(struct record *r)
{
	struct sampler_limit l;
	char why[200];

	sampler_limit(r->c.smp, &l);
	if (!r->quiet && cap_reason(&l, why, sizeof(why)))
		fprintf(stderr, "pybpfprof: warning: -F %u lowered to %u Hz: %s\n", l.asked, l.hz, why);
	return l.hz;
}

/*
 * The summary's rate lines: a lowered rate, and a clock that fell short of
 * it (the host could not keep up; each missed interrupt is a lost sample),
 * or samples the program skipped to keep within its CPU budget.
 */
static void print_rate(struct record *r, const uint64_t *st)
{
	struct sampler_limit l;
	double hz, share;
	char why[200];

	sampler_limit(r->c.smp, &l);
	sampler_achieved(r->c.smp, &hz, &share);
	if (cap_reason(&l, why, sizeof(why)))
		fprintf(stderr, "pybpfprof: warning: sampled at %u Hz, not the %u asked: %s\n",
			l.hz, l.asked, why);
	if (hz > 0 && hz < RATE_SHORT * l.hz)
		fprintf(stderr, "pybpfprof: warning: the host achieved %.0f interrupts/s per CPU of "
			"the %u asked: samples were lost\n", hz, l.hz);
	if (st[PBP_STAT_BUDGET])
		fprintf(stderr, "pybpfprof: warning: %llu samples or stack copies skipped: the "
			"sampler used its %g%% share of each CPU\n",
			(unsigned long long)st[PBP_STAT_BUDGET], l.budget_pct / 2.0);
}

static const char *mode_name(enum pbp_mode m)
{
	return m == MODE_WALL ? "wall" : m == MODE_GIL ? "gil" : "cpu";
}

/*
 * Samples the kernel delivered for a target that no Python thread state
 * claims are not in the profile. A few are normal (a thread of a C library,
 * one that has not run Python yet); most or all of them mean the thread ids
 * did not match, which must never pass as an empty or thin profile.
 */
static void warn_unattributed(const struct collector *c, uint64_t delivered)
{
	if (!c->dropped || (c->dropped * 10 < delivered && agg_total(c->agg)))
		return;
	fprintf(stderr, "pybpfprof: warning: %llu of %llu samples delivered by the kernel matched no "
		"Python thread of the target and are not in the profile (threads that never ran "
		"Python, or thread ids that could not be matched to the target's thread states)\n",
		(unsigned long long)c->dropped, (unsigned long long)delivered);
}

static void warn_late_ticks(const struct collector *c)
{
	if (c->late_ticks)
		fprintf(stderr, "pybpfprof: warning: %llu of %llu ticks (%.1f%%) dropped: the profiler "
			"fell behind, and the profile misses that share of the run\n",
			(unsigned long long)c->late_ticks,
			(unsigned long long)(c->ticks + c->late_ticks),
			100.0 * (double)c->late_ticks / (double)(c->ticks + c->late_ticks));
}

/* The summary's warnings alone: with --stats=json or none they still say what went wrong. */
static void print_warnings(struct record *r)
{
	uint64_t st[PBP_STAT__COUNT];

	sampler_stats(r->c.smp, st);
	warn_unattributed(&r->c, st[PBP_STAT_DELIVERED]);
	print_rate(r, st);
	warn_late_ticks(&r->c);
}

/* Targets that exec'd: what of them was profiled, and what was not. */
static void print_execs(const struct record *r)
{
	for (int i = 0; i < r->nexecs; i++) {
		const struct exec_note *n = &r->execs[i];
		double at = (double)(n->at_ns - r->start_ns) / 1e9;

		if (n->back_ns)
			fprintf(stderr, "pybpfprof: pid %d exec'd at %.2f s; profiled again %.1f ms later "
				"(Python %s)\n", (int)n->pid, at, (double)(n->back_ns - n->at_ns) / 1e6,
				n->version);
		else
			fprintf(stderr, "pybpfprof: pid %d exec'd at %.2f s; not profiled after: %s%s%s\n",
				(int)n->pid, at, n->err ? pbp_strerror(n->err) : "not Python by the end",
				n->version[0] ? " " : "", n->version);
	}
}

static void print_summary(struct record *r)
{
	const struct collector *c = &r->c;
	uint64_t st[PBP_STAT__COUNT];
	double secs = (double)(r->end_ns - r->start_ns) / 1e9;

	sampler_stats(c->smp, st);
	fprintf(stderr, "pybpfprof: %s mode, %llu samples in %.2f s (%.1f/s at %u Hz), %llu lost\n",
		mode_name(c->o.mode), (unsigned long long)agg_total(c->agg), secs,
		secs > 0 ? (double)agg_total(c->agg) / secs : 0.0, c->o.hz,
		(unsigned long long)st[PBP_STAT_LOST]);
	fprintf(stderr, "pybpfprof: kernel: %llu taken, %llu delivered; stacks: %llu deeper than %d, "
		"%llu faulted, %llu completed in user space, %llu failed\n",
		(unsigned long long)st[PBP_STAT_TAKEN], (unsigned long long)st[PBP_STAT_DELIVERED],
		(unsigned long long)st[PBP_STAT_TRUNCATED], PBP_MAX_FRAMES,
		(unsigned long long)st[PBP_STAT_FAULTED], (unsigned long long)c->sym.completed,
		(unsigned long long)c->sym.failed);
	warn_unattributed(c, st[PBP_STAT_DELIVERED]);
	print_rate(r, st);
	if (c->sym.elided)
		fprintf(stderr, "pybpfprof: %llu stacks read were deeper than %d frames: frames in their "
			"middle are one \"[... N frames elided]\" frame\n",
			(unsigned long long)c->sym.elided, PBP_MAX_DEPTH);
	if (c->sym.unknown_frames)
		fprintf(stderr, "pybpfprof: %llu frames unnamed, shown as [unknown]: their code was freed, "
			"or the process gone, before it could be read\n",
			(unsigned long long)c->sym.unknown_frames);
	if (c->o.mode != MODE_CPU)
		fprintf(stderr, "pybpfprof: %llu ticks (%llu dropped, the loop fell behind); "
			"%llu stacks taken as threads left the CPU (%llu lost)\n",
			(unsigned long long)c->ticks, (unsigned long long)c->late_ticks,
			(unsigned long long)st[PBP_STAT_SNAPPED],
			(unsigned long long)st[PBP_STAT_SNAP_LOST]);
	warn_late_ticks(c);
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p && !r->all)
			target_print_threads(c, &r->targets[i], stderr);
	print_execs(r);
	if (r->all)
		fprintf(stderr, "pybpfprof: %d Python processes profiled at the end, %d not profiled\n",
			live_targets(r), r->nskipped);
	for (int i = 0; i < r->nskipped; i++) {
		fprintf(stderr, "pybpfprof:   pid %d (", (int)r->skipped[i].pid);
		text_put(stderr, r->skipped[i].what, TEXT_PLAIN);     /* comm: the process chose it */
		fprintf(stderr, ") not profiled: %s\n", pbp_strerror(r->skipped[i].err));
	}
}

static void print_stats(struct record *r)
{
	const struct collector *c = &r->c;
	double ns = (double)(agg_total(c->agg) ? agg_total(c->agg) : 1);
	struct sampler_limit l;
	double hz, share;

	for (int i = 0; i < r->ntargets; i++) {
		if (!r->targets[i].p)
			continue;
		const struct remote_stats *rs = remote_stats(r->targets[i].p->r);
		const struct codecache_stats *cs = codecache_stats(r->targets[i].p->codes);

		fprintf(stderr, "pybpfprof: pid %d (Python %s):\n", (int)r->targets[i].pid,
			r->targets[i].p->version);
		fprintf(stderr, "  page cache    %llu hits, %llu misses, %llu evictions\n",
			(unsigned long long)rs->hits, (unsigned long long)rs->misses,
			(unsigned long long)rs->evictions);
		fprintf(stderr, "  remote reads  %llu (%.3f per sample), %llu bytes (%.1f per sample), "
			"%llu faults\n", (unsigned long long)rs->reads, (double)rs->reads / ns,
			(unsigned long long)rs->bytes, (double)rs->bytes / ns,
			(unsigned long long)rs->faults);
		fprintf(stderr, "  code objects  %llu hits, %llu misses, %llu reused addresses, "
			"%llu unreadable\n", (unsigned long long)cs->hits, (unsigned long long)cs->misses,
			(unsigned long long)cs->stale, (unsigned long long)cs->bad);
	}
	if (c->o.mode != MODE_CPU)
		fprintf(stderr, "  tick stacks   %llu reused (thread had not run), %llu from the kernel "
			"(on CPU), %llu taken by the kernel as the thread left the CPU, %llu read at "
			"the tick; %llu switches after the tick instant\n",
			(unsigned long long)c->reused, (unsigned long long)c->from_kernel,
			(unsigned long long)c->from_switch, (unsigned long long)c->read_now,
			(unsigned long long)c->late_switches);
	fprintf(stderr, "  thread lists  %llu read, %.3f s\n", (unsigned long long)c->rescans,
		(double)c->rescan_ns / 1e9);
	fprintf(stderr, "  samples       %llu outside Python code, %llu of non-Python threads, "
		"%llu frames unnamed\n", (unsigned long long)c->sym.no_python,
		(unsigned long long)c->dropped, (unsigned long long)c->sym.unknown_frames);
	sampler_achieved(c->smp, &hz, &share);
	sampler_limit(c->smp, &l);
	fprintf(stderr, "  sampler       %.0f interrupts/s per busy CPU (at %u Hz), program %.2f%% "
		"of each CPU, one interrupt %.1f us\n", hz, l.hz, share * 100, l.irq_ns / 1000.0);
	fprintf(stderr, "  aggregate     %u distinct stacks, %u locations\n", agg_nstacks(c->agg),
		agg_nlocs(c->agg));
}

/* ----------------------------------------------------- --stats=json */

/* Processes that exec'd, and those -a could not profile. */
static void json_events(struct jsonw *w, const struct record *r)
{
	jw_arr(w, "execs");
	for (int i = 0; i < r->nexecs; i++) {
		const struct exec_note *n = &r->execs[i];

		jw_obj(w, NULL);
		jw_int(w, "pid", n->pid);
		jw_num(w, "at_seconds", (double)(n->at_ns - r->start_ns) / 1e9);
		jw_num(w, "back_ms", n->back_ns ? (double)(n->back_ns - n->at_ns) / 1e6 : NAN);
		jw_str(w, "python", n->version[0] ? n->version : NULL);
		jw_str(w, "error", n->err ? pbp_strerror(n->err) : NULL);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_arr(w, "not_profiled");
	for (int i = 0; i < r->nskipped; i++) {
		jw_obj(w, NULL);
		jw_int(w, "pid", r->skipped[i].pid);
		jw_str(w, "what", r->skipped[i].what);
		jw_str(w, "error", pbp_strerror(r->skipped[i].err));
		jw_end_obj(w);
	}
	jw_end_arr(w);
}

/* Every end-of-run figure as one JSON object on one line of stderr (README: --stats=json). */
static void print_json(struct record *r)
{
	const struct collector *c = &r->c;
	uint64_t st[PBP_STAT__COUNT];
	struct jsonw w;

	sampler_stats(c->smp, st);
	jw_begin(&w, stderr);
	jw_str(&w, "mode", mode_name(c->o.mode));
	jw_num(&w, "seconds", (double)(r->end_ns - r->start_ns) / 1e9);
	jw_u64(&w, "samples", agg_total(c->agg));
	stats_json_sampler(&w, c, st);
	stats_json_collector(&w, c);
	jw_arr(&w, "processes");
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p)
			stats_json_target(&w, &r->targets[i]);
	jw_end_arr(&w);
	json_events(&w, r);
	jw_finish(&w);
}

/* What --stats and -q ask for at the end of the run. */
static void print_end(struct record *r)
{
	struct profile_meta m = { .mode = mode_name(r->c.o.mode), .hz = r->c.o.hz };

	if (r->stats == STATS_JSON || r->stats == STATS_NONE) {
		if (!r->quiet)
			print_warnings(r);
		if (r->stats == STATS_JSON)
			print_json(r);
		return;
	}
	if (!r->quiet) {
		print_summary(r);
		top_print(r->c.agg, &m, stderr, 10);
	}
	if (r->stats == STATS_TEXT)
		print_stats(r);
}

static int output_format(const struct record *r)
{
	return r->format >= 0 ? r->format : format_by_path(r->outpath);
}

/* Before sampling: a path that cannot be written is said now, not after the whole run. */
static int open_output(struct record *r)
{
	int err = profile_open(&r->out, output_format(r), r->outpath);

	if (err) {
		output_error(&r->out, r->outpath, err);
		return EXIT_IO;
	}
	return 0;
}

static int write_output(struct record *r)
{
	struct profile_meta m = { .mode = mode_name(r->c.o.mode), .hz = r->c.o.hz,
				  .start_unix_ns = r->start_unix_ns,
				  .duration_ns = r->end_ns - r->start_ns };
	int err = profile_write_to(&r->out, output_format(r), r->c.agg, &m);

	if (err) {
		output_error(&r->out, r->outpath, err);
		return EXIT_IO;
	}
	return 0;
}

static int report_sampler_error(int err)
{
	if (-err != PBP_E_PERM)
		return report_error(NULL, err);
	fprintf(stderr, "pybpfprof: not allowed to load BPF programs or open perf events "
		"(run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)\n");
	return exit_code_for(err);
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);   /* a closed terminal or SSH session: still write the profile */
	signal(SIGPIPE, SIG_IGN);
}

/* Wait for the launched command; stopped ourselves, stop it too (now or while waiting). */
static void end_child(struct record *r)
{
	bool told = false;

	while (r->child > 0) {
		if (stop_signal && !told) {
			kill(r->child, SIGTERM);
			told = true;
		}
		if (!reap_child(r, 0) && errno != EINTR)
			break;
	}
}

static void cleanup(struct record *r, int go_fd)
{
	if (go_fd >= 0)
		close(go_fd);   /* an unstarted child sees EOF and exits */
	end_child(r);
	output_abort(&r->out);  /* a run that ended early: its temporary goes */
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p)
			target_fini(&r->c, &r->targets[i]);
	sampler_close(r->c.smp);
	agg_free(r->c.agg);
	free(r->c.locs);
	free(r->targets);
	free(r->skipped);
	if (r->comm_re)
		regfree(&r->comm_regex);
}

/*
 * A command that cannot be profiled (not Python within LAUNCH_WAIT_NS, an
 * unsupported version) was started only to be profiled: stop it and say so
 * now rather than wait for it to end.
 */
static void stop_command(struct record *r)
{
	if (r->child <= 0)
		return;
	kill(r->child, SIGTERM);
	for (int ms = 0; ms < STOP_WAIT_MS && waitpid(r->child, NULL, WNOHANG) == 0; ms += 10)
		usleep(10000);
	if (waitpid(r->child, NULL, WNOHANG) == 0) {
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
	}
	r->child = 0;
}

static int start_command(struct record *r, int *go_fd)
{
	int err = launch(r, go_fd);

	if (err) {
		fprintf(stderr, "pybpfprof: cannot start '%s': %s\n", r->cmd[0], strerror(-err));
		return EXIT_INTERNAL;
	}
	if (write(*go_fd, "g", 1) != 1)
		return EXIT_INTERNAL;
	close(*go_fd);
	*go_fd = -1;
	err = attach_child(r);
	if (err == -PBP_E_CHILD)
		return EXIT_NOT_PYTHON;
	if (err) {
		fprintf(stderr, "pybpfprof: '%s': %s%s\n", r->cmd[0], pbp_strerror(err),
			r->child ? "; stopping it" : "");
		stop_command(r);
		return exit_code_for(err);
	}
	return 0;
}

static int run(struct record *r, int *go_fd)
{
	struct sampler_opts so;
	int code, err;

	if ((code = privs_check()) != 0 || (code = pidns_check_proc()) != 0)
		return code;
	if (!r->cmd && (code = open_targets(r)) != 0)
		return code;
	if ((code = open_output(r)) != 0)
		return code;
	so = (struct sampler_opts){ .hz = r->c.o.hz, .sched = r->c.o.mode != MODE_CPU, .execs = r->all,
				    .cb = on_sample, .pcb = on_proc_event, .ctx = r };
	err = sampler_open(&r->c.smp, &so);
	if (err)
		return report_sampler_error(err);
	r->c.o.hz = rate_limited(r);
	for (int i = 0; i < r->ntargets; i++)
		if ((err = start_target(r, &r->targets[i])) != 0)
			return report_sampler_error(err);
	if (r->all)
		discover(r);
	if (r->cmd && (code = start_command(r, go_fd)) != 0)
		return code;
	/*
	 * Set up: from here on only reading targets needs a capability
	 * (CAP_SYS_PTRACE; -a also attaches new processes with it). In launch
	 * mode this comes after the command started, with what it inherits.
	 */
	privs_note_output(output_rename_target(&r->out));
	if (r->cmd)
		privs_note_child();
	if (r->all)
		privs_note_attach();
	privs_drop_after_setup();
	r->start_ns = now_ns();
	r->start_unix_ns = (uint64_t)time(NULL) * 1000000000ull;
	loop(r);
	code = write_output(r);
	print_end(r);
	return code;
}

/*
 * Like time(1): once the profile is written, the launched command's own
 * status, 128 + N for a command killed by signal N, as shells report it.
 */
static int command_status(const struct record *r)
{
	int st = r->child_status, code;

	if (WIFSIGNALED(st)) {
		code = 128 + WTERMSIG(st);
		if (!r->quiet)
			fprintf(stderr, "pybpfprof: '%s' was killed by signal %d (%s)\n", r->cmd[0],
				WTERMSIG(st), strsignal(WTERMSIG(st)));
		return code;
	}
	code = WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_INTERNAL;
	if (!r->quiet)
		fprintf(stderr, "pybpfprof: '%s' exited with status %d\n", r->cmd[0], code);
	return code;
}

int record_main(int argc, char **argv)
{
	struct argp argp = { opts, parse_opt, "[-- COMMAND [ARG...]]", doc, NULL, NULL, NULL };
	struct record r = { .format = -1, .c.o = { .mode = MODE_CPU, .hz = 99 } };
	int go_fd = -1, code;

	argp_parse(&argp, argc, argv, 0, NULL, &r);
	sampler_verbose(r.verbose);
	if (!r.max_processes)
		r.max_processes = r.all ? DEFAULT_MAX_PROCESSES : (r.npids ? r.npids : 1);
	r.c.agg = agg_new();
	r.c.locs = malloc(sizeof(*r.c.locs) * MAX_LOCS);
	r.targets = calloc((size_t)r.max_processes, sizeof(*r.targets));
	r.skipped = calloc(MAX_SKIPPED, sizeof(*r.skipped));
	if (!r.c.agg || !r.c.locs || !r.targets || !r.skipped)
		return report_error(NULL, -PBP_E_NOMEM);
	install_signals();
	code = run(&r, &go_fd);
	cleanup(&r, go_fd);
	if (r.child_reaped && code == EXIT_OK)
		code = command_status(&r);
	return code;
}
