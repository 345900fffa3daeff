/* SPDX-License-Identifier: MIT */
/*
 * A run from start to end: its buffers, its set-up (targets, output,
 * sampler, privileges dropped), the loop, and what it gives back.
 */
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "read/sources.h"
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
#include "session/privs.h"
#include "session/report.h"
#include "session/run.h"
#include "session/session.h"
#include "symbol/natsym.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* ------------------------------------------------------------- run */

static int open_targets(struct session *r)
{
	if (r->o.all)
		return 0;   /* -p is a filter then; run_discover() finds the processes */
	for (int i = 0; i < r->o.npids; i++) {
		struct target *t = &r->targets[r->ntargets];
		int err = run_open(r, r->o.pids[i], &run_target_limits, &t->p);

		if (err == -PBP_E_NOTPY && r->o.follow) {
			pyproc_close(t->p);     /* a shell or a wrapper: its descendants are followed */
			t->p = NULL;
			continue;
		}
		if (err) {
			int code = report_attach_error(r->o.pids[i], err, t->p);

			pyproc_close(t->p);
			t->p = NULL;
			return code;
		}
		t->pid = r->o.pids[i];
		r->ntargets++;
		run_index_target(r, t);
	}
	return 0;
}

void session_run(struct session *r)
{
	bool tty = !r->o.quiet && isatty(STDERR_FILENO);

	r->loop.stop = &stop_signal;
	run_add_timers(r, tty);
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

static int output_format(const struct session *r)
{
	return r->o.format >= 0 ? r->o.format : format_by_path(r->o.outpath);
}

/* Before sampling: a path that cannot be written is said now, not after the whole run. */
static int open_output(struct session *r)
{
	int err = r->o.no_output ? 0 : profile_open(&r->out, output_format(r), r->o.outpath);

	if (err) {
		output_error(&r->out, r->o.outpath, err);
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

/* html: the targets' source files for a's page into src and m->sources (nothing for other formats). */
static int run_sources(struct session *r, const struct agg *a, struct sources *src, struct profile_meta *m)
{
	if (!r->roots)
		return 0;
	m->sources = src;
	return sources_collect(a, &(struct src_reader){ source_root, read_source, r->roots }, src);
}

/*
 * A window closed and the aggregate was reset: what points into it is made
 * again. The labels are kept by each target; looked at now and then, made
 * again only when they may have changed (run_labels_hold).
 */
static void new_window(void *ctx)
{
	struct session *r = ctx;
	uint64_t now = mono_ns(), every = r->o.rescan_ns ? r->o.rescan_ns : LABELS_EVERY_NS;

	if (r->c.timeline)
		timeline_reset(r->c.timeline);  /* its stack ids were the old aggregate's */
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (!t->p)
			continue;
		target_new_window(&r->c, t);
		/* Not sampled since: its labels are in no profile, and reading /proc for them is a node's idle cost. */
		if (t->counted != t->counted_labels && (t->labels_moved || now - t->labels_ns >= every) &&
		    !run_labels_hold(r, t))
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

static void cleanup(struct session *r)
{
	if (r->go_fd >= 0)
		close(r->go_fd);   /* an unstarted child sees EOF and exits */
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
	free(r->index);
	free(r->skipped);
	free(r->notes);
	if (r->o.comm_re)
		regfree(&r->o.comm_regex);
}

int session_start(struct session *r)
{
	struct sampler_opts so;
	int code, err;

	install_signals();
	if ((code = privs_check()) != 0 || (code = pidns_check_proc()) != 0)
		return code;
	if (!r->o.cmd && (code = open_targets(r)) != 0)
		return code;
	if ((code = open_output(r)) != 0)
		return code;
	r->c.o.names_late = r->o.all && !r->c.o.per_thread && r->c.o.mode == MODE_CPU;
	so = (struct sampler_opts){ .hz = r->c.o.hz, .sched = r->c.o.mode != MODE_CPU, .execs = r->o.all,
				    .renames = r->o.all && r->o.comm_re,
				    .late_threads = r->c.o.names_late, .follow = r->o.follow,
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
	if (r->o.all)
		run_discover(r);
	if (r->o.follow && r->o.npids)
		follow_existing(r);
	if (r->o.cmd && (code = launch_start(r, &r->go_fd)) != 0)
		return code;
	/*
	 * Set up: from here on only reading targets needs a capability
	 * (CAP_SYS_PTRACE; -a also attaches new processes with it). In launch
	 * mode this comes after the command started, with what it inherits.
	 */
	if (!r->o.no_output)
		privs_note_output(output_rename_target(&r->out));
	if (r->o.cmd)
		privs_note_child();
	if (r->o.all)
		privs_note_attach();
	if (r->roots)
		privs_note_sources();
	privs_drop_after_setup();
	r->start_ns = mono_ns();
	r->start_unix_ns = wall_ns();
	r->loop.agg = r->c.agg;
	r->loop.win = (struct window){ .start_ns = r->start_ns, .start_unix_ns = r->start_unix_ns };
	r->loop.reset = new_window;
	return 0;
}

/* The buffers a run needs (targets, locations, the aggregate): 0 or an exit code. */
static int alloc(struct session *r)
{
	sampler_verbose(r->o.verbose);
	if (!r->o.max_processes)
		r->o.max_processes = r->o.all || r->o.follow ? DEFAULT_MAX_PROCESSES : (r->o.npids ? r->o.npids : 1);
	if (r->o.follow && !(r->notes = calloc(MAX_PROC_NOTES, sizeof(*r->notes))))
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
	if (!r->o.no_output && output_format(r) == format_by_name("html") && !(r->roots = malloc(sizeof(*r->roots))))
		return report_error(NULL, -PBP_E_NOMEM);
	if (r->roots)
		srcroots_init(r->roots);
	r->target_slots = 2 * r->o.max_processes;
	r->targets = calloc((size_t)r->target_slots, sizeof(*r->targets));
	r->skipped = calloc(MAX_SKIPPED, sizeof(*r->skipped));
	if (!r->c.agg || !r->c.locs || !r->targets || !r->skipped || run_index_init(r) != 0)
		return report_error(NULL, -PBP_E_NOMEM);
	return 0;
}


int session_new(struct session_opts *o, struct session **s)
{
	struct session *r = calloc(1, sizeof(*r));

	*s = r;
	if (!r) {
		if (o->comm_re)
			regfree(&o->comm_regex);
		return report_error(NULL, -PBP_E_NOMEM);
	}
	r->o = *o;
	r->c.o = o->sampling;
	r->c.ops = &bpf_sampler_ops;
	r->go_fd = -1;
	return alloc(r);
}

int session_add_sink(struct session *s, const struct window_sink *k)
{
	return loop_add_sink(&s->loop, k);
}

void session_keep_locations(struct session *s)
{
	s->loop.keep_locs = true;
}

struct timer *session_add_timer(struct session *s, const struct timer *t)
{
	return loop_add(&s->loop, t);
}

int session_wake_on(struct session *s, int fd)
{
	return sampler_wake_on(s->c.smp, fd);
}

int session_close(struct session *s, uint64_t end_ns, bool last)
{
	return loop_close_window(&s->loop, end_ns, last);
}

int session_check_profiled(struct session *s)
{
	return s->o.follow && s->o.cmd ? launch_check_profiled(s) : 0;
}

/* Process roots only when more than one process is in the profile, as without following. */
bool session_one_root(const struct session *s)
{
	return s->o.follow && s->o.npids < 2;
}

int session_close_run(struct session *s, bool drop_root)
{
	if (drop_root && session_one_root(s))
		agg_drop_single_root(s->c.agg);
	return loop_close_window(&s->loop, s->end_ns, true);
}

int session_write(struct session *s, const struct agg *a, const struct window *w, bool times)
{
	struct sources src = { 0 };
	struct profile_meta m = { .mode = mode_name(s->c.o.mode), .hz = s->c.o.hz,
				  .start_unix_ns = w->start_unix_ns,
				  .duration_ns = w->end_ns - w->start_ns, .timeline = times ? s->c.timeline : NULL };
	int err = run_sources(s, a, &src, &m);

	if (m.timeline && m.timeline->full)
		fprintf(stderr, "pybpfprof: warning: more than %zu samples: the Gecko profile has no sample "
			"times, its samples are laid out by status and stack\n", m.timeline->max);
	if (!err)
		err = profile_write_to(&s->out, output_format(s), a, &m);
	sources_free(&src);
	if (err)
		output_error(&s->out, s->o.outpath, err);
	return err;
}

void session_stats(const struct session *s, struct session_stats *st)
{
	*st = (struct session_stats){ .mode = s->c.o.mode, .hz = s->c.o.hz, .start_ns = s->start_ns,
				      .end_ns = s->end_ns, .start_unix_ns = s->start_unix_ns,
				      .processes = run_live_targets(s), .no_gil = run_all_free_threaded(s),
				      .reads = run_process_reads(s) };
	if (s->c.smp)
		sampler_stats(s->c.smp, st->kernel);
}

/* The slice's: the kernel's lost count alone, one lookup where all its counters were 21. */
void session_counts(const struct session *s, struct session_counts *c)
{
	*c = (struct session_counts){ .processes = run_live_targets(s), .reads = run_process_reads(s),
				      .lost = s->c.smp ? sampler_stat(s->c.smp, PBP_STAT_LOST) : 0,
				      .name_reads = s->c.name_reads, .names_checked = s->c.names_checked,
				      .names_unsampled = s->c.names_unsampled, .lists_spared = s->c.lists_spared,
				      .labels_made = s->c.labels_made, .labels_kept = s->c.labels_kept };
}

int session_stop(struct session *s, int code)
{
	if (!s || s->stopped)
		return code;
	s->stopped = true;
	cleanup(s);
	return s->child_reaped && code == EXIT_OK ? launch_status(s) : code;
}

void session_free(struct session *s)
{
	session_stop(s, 0);
	free(s);
}
