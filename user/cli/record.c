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
#include "cli/privs.h"
#include "cli/report.h"
#include "cli/run.h"
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


static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

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

/* ------------------------------------------------------------- run */

static int open_targets(struct record *r)
{
	if (r->all)
		return 0;   /* -p is a filter then; run_discover() finds the processes */
	for (int i = 0; i < r->npids; i++) {
		struct target *t = &r->targets[r->ntargets];
		int err = run_open(r, r->pids[i], &run_target_limits, &t->p);

		if (err == -PBP_E_NOTPY && r->follow) {
			pyproc_close(t->p);     /* a shell or a wrapper: its descendants are followed */
			t->p = NULL;
			continue;
		}
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
static int any_alive(struct record *r, bool look)
{
	uint64_t now = mono_ns();

	launch_reap(r, WNOHANG);
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];
		bool up = t->pid == r->child ? r->child != 0 : !look || pid_alive(t->pid);

		if (t->p && (!t->alive || !up)) {
			if (r->follow) {
				if (t->alive)
					sampler_del_proc(r->c.smp, t->pid), t->alive = false;
				follow_drop_gone(r, t, now);    /* a tree's processes come and go */
			} else if (r->all) {
				run_drop_target(r, t);   /* a host has many: free them as they go */
				r->trim_due = true;
			}
			else if (t->alive)
				sampler_del_proc(r->c.smp, t->pid), t->alive = false;
		}
	}
	/* A target that exec'd counts while its new program is looked at. */
	return run_live_targets(r) + (r->all ? 0 : r->npending);
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

/* ------------------------------------------------------------- timers */

/* The run's -d: over. */
static bool duration_over(void *ctx, struct timer *t, uint64_t now)
{
	(void)ctx, (void)t, (void)now;
	return false;
}

/* wall and gil modes: ticks at hz on the monotonic clock, caught up if the loop fell behind. */
static bool run_ticks(void *ctx, struct timer *t, uint64_t now)
{
	struct record *r = ctx;
	int done = 0;

	while (t->next <= now) {
		if (done++ < MAX_CATCH_UP) {
			for (int i = 0; i < r->ntargets; i++) {
				uint64_t before = agg_total(r->c.agg);

				target_tick(&r->c, &r->targets[i], t->next);
				if (r->follow)
					follow_counted(r, r->targets[i].pid, agg_total(r->c.agg) - before);
			}
			r->c.ticks++;
		} else {
			r->c.late_ticks++;
		}
		t->next += t->period;
	}
	return true;
}

/*
 * What the processes that went held (page and code caches, thread tables),
 * and what finding processes took for a moment (their ELF files read), is
 * in the middle of the heap, which malloc never gives back by itself: an
 * agent's memory would stay at its highest for good. At most once an
 * ALIVE_EVERY_NS, on a node where processes end several times a second.
 */
static void trim_heap(struct record *r, uint64_t now)
{
	if (!r->trim_due || now < r->next_trim)
		return;
	r->trim_due = false;
	r->next_trim = now + ALIVE_EVERY_NS;
	malloc_trim(0);
}

/*
 * Every ALIVE_EVERY_NS, and at once after an exit event: the run ends with
 * its targets. With -a an exit event drops the target it names; /proc is
 * looked at for all only every ALIVE_EVERY_NS (a host's processes exit
 * several times a second, and it has hundreds).
 */
static bool check_alive(void *ctx, struct timer *t, uint64_t now)
{
	struct record *r = ctx;
	bool look = !r->all || now >= r->next_alive_look, go;

	(void)t;
	stagecpu_enter(STAGE_DISCOVERY);
	if (look)
		r->next_alive_look = now + (r->all ? ALIVE_HOST_EVERY_NS : ALIVE_EVERY_NS);
	if (r->follow) {
		any_alive(r, look);
		go = follow_roots_alive(r) && !r->launch_err;
	} else {
		go = any_alive(r, look) || r->all;
		if (go)
			trim_heap(r, now);
	}
	stagecpu_leave();
	return go;
}

/* --subprocesses: a command that is not Python and started nothing is given up on. */
static bool launch_deadline(void *ctx, struct timer *t, uint64_t now)
{
	(void)t, (void)now;
	return !launch_given_up(ctx);
}

static uint64_t earlier(uint64_t a, uint64_t b)
{
	return b && (!a || b < a) ? b : a;
}

static uint64_t pending_due(void *ctx)
{
	const struct record *r = ctx;
	uint64_t due = 0;

	for (int i = 0; i < r->npending; i++)
		due = earlier(due, r->pending[i].next_ns);
	return due;
}

/*
 * A target's thread list is read when it started a thread, and every
 * RESCAN_EVERY_NS for those sampled since the last: what a read would find
 * in an idle one (names set, threads ended) shows in no profile until it is
 * sampled, and a node's hundreds of idle processes read nothing.
 */
static bool rescan_due(void *ctx, struct timer *t, uint64_t now)
{
	struct record *r = ctx;
	bool all = now >= r->next_rescan;

	(void)t;
	stagecpu_enter(STAGE_DISCOVERY);
	for (int i = 0; i < r->ntargets; i++) {
		struct target *tg = &r->targets[i];
		bool due = all && tg->counted != tg->counted_rescan;

		if (!tg->alive)
			continue;
		if (tg->rescan_soon && now >= tg->rescan_soon) {
			tg->rescan_soon = 0;
			due = true;
		}
		if (tg->rescan_later && now >= tg->rescan_later) {
			tg->rescan_later = 0;
			due = true;
		}
		if (due)
			target_rescan(&r->c, tg, false);
	}
	if (all)
		r->next_rescan = now + (r->c.o.names_late ? RESCAN_HOST_EVERY_NS : RESCAN_EVERY_NS);
	stagecpu_leave();
	return true;
}

static uint64_t rescans_due(void *ctx)
{
	const struct record *r = ctx;
	uint64_t due = r->next_rescan;

	for (int i = 0; i < r->ntargets; i++) {
		if (!r->targets[i].alive)
			continue;       /* rescan_due skips it: its deadline would wake the loop at once, forever */
		due = earlier(due, r->targets[i].rescan_soon);
		due = earlier(due, r->targets[i].rescan_later);
	}
	return due;
}

static bool jitter(void *ctx, struct timer *t, uint64_t now)
{
	struct record *r = ctx;

	(void)t, (void)now;
	sampler_jitter(r->c.smp);
	return true;
}

static uint64_t jitter_every(unsigned hz)
{
	uint64_t n = JITTER_PERIODS * (1000000000ull / hz);

	return n > JITTER_MIN_NS ? n : JITTER_MIN_NS;
}

/* Once a second on a terminal, on the second since the start. */
static bool live_tick(void *ctx, struct timer *t, uint64_t now)
{
	live_line(ctx, now);
	t->next += t->period;
	return true;
}

/* Samples wait in the ring buffer: a few per CPU, within [BATCH_NS, BATCH_MAX_NS]. */
static uint64_t batch_ns(unsigned hz)
{
	uint64_t batch = BATCH_SAMPLES * (1000000000ull / hz);

	return batch < BATCH_NS ? BATCH_NS : batch > BATCH_MAX_NS ? BATCH_MAX_NS : batch;
}

static void wait_samples(void *ctx, uint64_t ns)
{
	struct record *r = ctx;

	/* a sleep costs no CPU: what this takes is the batch's samples, taken in and named */
	stagecpu_enter(STAGE_NAMING);
	if (ns)
		sampler_wait(r->c.smp, ns);
	else
		sampler_drain(r->c.smp);
	stagecpu_leave();
}

/*
 * The timers, in the order they run when due at once: the end of -d
 * first, then ticks (their instants are past), then the rest.
 */
static void add_timers(struct record *r, bool tty)
{
	uint64_t start = r->start_ns, tick = 1000000000ull / r->c.o.hz;
	struct loop *l = &r->loop;

	if (r->duration > 0)
		loop_add(l, &(struct timer){ .next = start + (uint64_t)(r->duration * 1e9),
					     .fn = duration_over });
	if (r->c.o.mode != MODE_CPU)
		loop_add(l, &(struct timer){ .period = tick, .next = start + tick, .fn = run_ticks });
	r->alive_timer = loop_add(l, &(struct timer){ .period = ALIVE_EVERY_NS, .next = TIMER_NOW,
						      .fn = check_alive });
	if (r->follow && r->cmd)
		loop_add(l, &(struct timer){ .next = start + LAUNCH_WAIT_NS, .fn = launch_deadline });
	loop_add(l, &(struct timer){ .due = pending_due, .fn = run_pending });
	loop_add(l, &(struct timer){ .due = rescans_due, .fn = rescan_due });
	loop_add(l, &(struct timer){ .period = jitter_every(r->c.o.hz),
				     .next = start + jitter_every(r->c.o.hz), .fn = jitter });
	if (tty)
		loop_add(l, &(struct timer){ .period = 1000000000ull, .next = start + 1000000000ull,
					     .fn = live_tick });
}

void run_loop(struct record *r)
{
	bool tty = !r->quiet && isatty(STDERR_FILENO);

	r->next_rescan = r->start_ns + RESCAN_EVERY_NS;
	r->loop.longest = batch_ns(r->c.o.hz);
	r->loop.wait = wait_samples;
	r->loop.ctx = r;
	r->loop.stop = &stop_signal;
	add_timers(r, tty);
	stagecpu_thread(STAGE_OTHER);
	loop_run(&r->loop);
	/*
	 * Samples still in the ring buffer belong to the run; no more come once
	 * the interrupts stop. Before, at 10 kHz the last drain ended while
	 * samples still came, and those were said "not kept (out of memory)".
	 */
	sampler_pause(r->c.smp);
	while (sampler_drain(r->c.smp) > 0)
		;
	r->end_ns = mono_ns();
	if (tty)
		live_clear();
}

static int output_format(const struct record *r)
{
	return r->format >= 0 ? r->format : format_by_path(r->outpath);
}

/* Before sampling: a path that cannot be written is said now, not after the whole run. */
static int open_output(struct record *r)
{
	int err = r->no_output ? 0 : profile_open(&r->out, output_format(r), r->outpath);

	if (err) {
		output_error(&r->out, r->outpath, err);
		return EXIT_IO;
	}
	return 0;
}

/* ------------------------------------------------------------- sinks */

static uint32_t source_root(void *ctx, uint32_t pid)
{
	uint32_t root = srcroots_of(ctx, pid);

	return root == SRCROOT_NONE ? SRC_NO_ROOT : root == SRCROOT_FULL ? SRC_ROOTS_FULL
		: root == SRCROOT_DENIED ? SRC_ROOT_DENIED : root;
}

static int read_source(void *ctx, uint32_t root, const char *path, size_t max, char **text, size_t *len,
		       size_t *size, char *why, size_t whylen)
{
	return srcroots_read(ctx, root, path, max, text, len, size, why, whylen);
}

int run_sources(struct record *r, const struct agg *a, struct sources *src, struct profile_meta *m)
{
	if (!r->roots)
		return 0;
	m->sources = src;
	return sources_collect(a, &(struct src_reader){ source_root, read_source, r->roots }, src);
}

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
		err = profile_write_to(&r->out, output_format(r), a, &m);
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

/*
 * A window closed and the aggregate was reset: what points into it is made
 * again. The labels are kept by each target; read again now and then, for
 * what changed (a service name whose OCI bundle was not written yet).
 */
static void new_window(void *ctx)
{
	struct record *r = ctx;
	uint64_t now = mono_ns();

	if (r->c.timeline)
		timeline_reset(r->c.timeline);  /* its stack ids were the old aggregate's */
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (!t->p)
			continue;
		target_new_window(&r->c, t);
		/* Not sampled since: its labels are in no profile, and reading /proc for them is a node's idle cost. */
		if (now - t->labels_ns >= LABELS_EVERY_NS && t->counted != t->counted_labels)
			run_label_target(r, t);
	}
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

void run_cleanup(struct record *r, int go_fd)
{
	if (go_fd >= 0)
		close(go_fd);   /* an unstarted child sees EOF and exits */
	launch_end(r, stop_signal != 0);
	output_abort(&r->out);  /* a run that ended early: its temporary goes */
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p)
			target_fini(&r->c, &r->targets[i]);
	sampler_close(r->c.smp);
	agg_free(r->c.agg);
	natsym_free(r->c.natsym);
	kstacks_free(r->c.kstacks);
	timeline_free(&r->timeline);
	if (r->roots)
		srcroots_close(r->roots);
	free(r->roots);
	free(r->c.locs);
	free(r->c.list);
	free(r->targets);
	free(r->skipped);
	free(r->notes);
	if (r->comm_re)
		regfree(&r->comm_regex);
}

int run_setup(struct record *r, int *go_fd)
{
	struct sampler_opts so;
	int code, err;

	install_signals();
	if ((code = privs_check()) != 0 || (code = pidns_check_proc()) != 0)
		return code;
	if (!r->cmd && (code = open_targets(r)) != 0)
		return code;
	if ((code = open_output(r)) != 0)
		return code;
	r->c.o.names_late = r->all && !r->c.o.per_thread && r->c.o.mode == MODE_CPU;
	so = (struct sampler_opts){ .hz = r->c.o.hz, .sched = r->c.o.mode != MODE_CPU, .execs = r->all,
				    .late_threads = r->c.o.names_late, .follow = r->follow,
				    .ustack_bytes = r->c.o.native && !r->c.o.native_fp ? NATIVE_STACK_BYTES : 0,
				    .ustack_fp = r->c.o.native && r->c.o.native_fp,
				    .kernel = r->c.o.kernel, .regs = r->c.o.native_leaf,
				    .cb = run_on_sample, .pcb = run_on_proc_event, .ctx = r };
	err = sampler_open(&r->c.smp, &so);
	if (err)
		return report_sampler_error(err);
	r->c.o.hz = run_rate_limited(r);
	for (int i = 0; i < r->ntargets; i++)
		if ((err = run_start_target(r, &r->targets[i])) != 0)
			return report_sampler_error(err);
	if (r->all)
		run_discover(r);
	if (r->follow && r->npids)
		follow_existing(r);
	if (r->cmd && (code = launch_start(r, go_fd)) != 0)
		return code;
	/*
	 * Set up: from here on only reading targets needs a capability
	 * (CAP_SYS_PTRACE; -a also attaches new processes with it). In launch
	 * mode this comes after the command started, with what it inherits.
	 */
	if (!r->no_output)
		privs_note_output(output_rename_target(&r->out));
	if (r->cmd)
		privs_note_child();
	if (r->all)
		privs_note_attach();
	if (r->roots)
		privs_note_sources();
	privs_drop_after_setup();
	r->start_ns = mono_ns();
	r->loop.agg = r->c.agg;
	r->loop.win = (struct window){ .start_ns = r->start_ns,
				       .start_unix_ns = wall_ns() };
	r->loop.reset = new_window;
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

int run_alloc(struct record *r)
{
	sampler_verbose(r->verbose);
	if (!r->max_processes)
		r->max_processes = r->all || r->follow ? DEFAULT_MAX_PROCESSES : (r->npids ? r->npids : 1);
	if (r->follow && !(r->notes = calloc(MAX_PROC_NOTES, sizeof(*r->notes))))
		return report_error(NULL, -PBP_E_NOMEM);
	r->c.agg = agg_new();
	r->c.locs = malloc(sizeof(*r->c.locs) * MAX_LOCS);
	/* Made now: libdw's start (tens of ms) is paid before sampling, not by the first samples. */
	if (r->c.o.native_leaf || r->c.o.native)
		r->c.natsym = natsym_new();
	/*
	 * Likewise kallsyms (some 0.1 s), read once before sampling: also
	 * before capabilities are dropped, after which its addresses read 0.
	 */
	if (r->c.o.kernel && !(r->c.kstacks = kstacks_new(KALLSYMS_PATH)))
		return report_error(NULL, -PBP_E_NOMEM);
	timeline_init(&r->timeline, TIMELINE_MAX);
	if (output_format(r) == format_by_name("gecko"))
		r->c.timeline = &r->timeline;   /* the one format that shows when samples were taken */
	/* The one format that shows source lines; the agent writes no file. */
	if (!r->no_output && output_format(r) == format_by_name("html") && !(r->roots = malloc(sizeof(*r->roots))))
		return report_error(NULL, -PBP_E_NOMEM);
	if (r->roots)
		srcroots_init(r->roots);
	r->target_slots = 2 * r->max_processes;
	r->targets = calloc((size_t)r->target_slots, sizeof(*r->targets));
	r->skipped = calloc(MAX_SKIPPED, sizeof(*r->skipped));
	if (!r->c.agg || !r->c.locs || !r->targets || !r->skipped)
		return report_error(NULL, -PBP_E_NOMEM);
	return 0;
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
