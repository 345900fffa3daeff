/* SPDX-License-Identifier: MIT */
/*
 * What a run says at its end, on stderr: the summary (samples, what the
 * kernel took and delivered, per-thread statuses), warnings when the profile
 * misses something (a capped rate, dropped ticks, unattributed samples), the
 * cache and read statistics, or all of it as one JSON line (--stats).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "session/run.h"
#include "session/session.h"
#include "session/statsjson.h"
#include "core/errors.h"
#include "core/jsonw.h"
#include "core/limits.h"
#include "core/text.h"
#include "cpython/asyncio_graph.h"
#include "cpython/codeobj.h"
#include "output/topview.h"
#include "output/writers.h"
#include "proc/remote.h"
#include "sample/sampler.h"
#include "sample/target.h"

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
unsigned run_rate_limited(struct session *r)
{
	struct sampler_limit l;
	char why[200];

	sampler_limit(r->c.smp, &l);
	if (!r->o.quiet && cap_reason(&l, why, sizeof(why)))
		fprintf(stderr, "pybpfprof: warning: -F %u lowered to %u Hz: %s\n", l.asked, l.hz, why);
	return l.hz;
}

/*
 * The summary's rate lines: a lowered rate, and a clock that fell short of
 * it (the host could not keep up; each missed interrupt is a lost sample),
 * or samples the program skipped to keep within its CPU budget.
 */
static void print_rate(struct session *r, const uint64_t *st)
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

/*
 * cpu mode: every sample the kernel delivered is in the profile or said
 * here, by kind, so that the figures add up (the per-process lines of
 * --subprocesses count what the profile got of each).
 */
static void print_not_in_profile(const struct session *r, uint64_t delivered)
{
	const struct collector *c = &r->c;
	uint64_t in = agg_total(c->agg), out = delivered > in ? delivered - in : 0;
	uint64_t kinds = c->sym.no_python + c->dropped + r->unowned;

	if (c->o.mode != MODE_CPU || !out)
		return;
	fprintf(stderr, "pybpfprof: %llu of %llu samples delivered are not in the profile: %llu had "
		"no Python frame, %llu were of threads no Python thread state claims, %llu of "
		"processes gone or not known yet", (unsigned long long)out,
		(unsigned long long)delivered, (unsigned long long)c->sym.no_python,
		(unsigned long long)c->dropped, (unsigned long long)r->unowned);
	if (out > kinds)
		fprintf(stderr, ", %llu not kept (out of memory)", (unsigned long long)(out - kinds));
	fputc('\n', stderr);
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
static void print_warnings(struct session *r)
{
	uint64_t st[PBP_STAT__COUNT];

	sampler_stats(r->c.smp, st);
	warn_unattributed(&r->c, st[PBP_STAT_DELIVERED]);
	print_rate(r, st);
	warn_late_ticks(&r->c);
}

/* Targets that exec'd: what of them was profiled, and what was not. */
static void print_execs(const struct session *r)
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

/* --async: the waiting tasks' samples come on top of the threads': said, so totals read right. */
static void print_async(const struct collector *c)
{
	if (!c->o.async)
		return;
	fprintf(stderr, "pybpfprof: --async: %llu stacks put under their running task",
		(unsigned long long)c->async.tasked);
	if (c->o.mode == MODE_WALL)
		fprintf(stderr, "; %llu samples are waiting tasks' (one a tick for each task not "
			"running), counted besides the threads' %llu", (unsigned long long)c->async.waiting,
			(unsigned long long)(agg_total(c->agg) - c->async.waiting));
	fputc('\n', stderr);
	if (c->async.missed)
		fprintf(stderr, "pybpfprof: warning: --async: %llu samples of waiting tasks not counted: "
			"a task list held more than the %u tasks read at once\n",
			(unsigned long long)c->async.missed, AIO_MAX_TASKS);
}

static void print_summary(struct session *r)
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
	print_not_in_profile(r, st[PBP_STAT_DELIVERED]);
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
	print_async(c);
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p && !r->o.all && !r->o.follow)
			target_print_threads(c, &r->targets[i], stderr);
	if (r->o.follow)
		follow_summary(r);
	print_execs(r);
	if (r->o.all)
		fprintf(stderr, "pybpfprof: %d Python processes profiled at the end, %d not profiled\n",
			run_live_targets(r), r->nskipped);
	for (int i = 0; i < r->nskipped; i++) {
		const struct skipped *k = &r->skipped[i];

		fprintf(stderr, "pybpfprof:   pid %d (", (int)k->pid);
		text_put(stderr, k->comm, TEXT_PLAIN);     /* the process chose it */
		if (k->version[0])
			fprintf(stderr, ", Python %s%s%s", k->version, k->mismatch ? " " : "", k->mismatch ? k->mismatch : "");
		fprintf(stderr, ") not profiled: %s\n", pbp_strerror(k->err));
	}
}

/* How the kernel read the frames (3.11+: from copies of the data stack) and code objects (3.12+). */
static void print_kernel_walk(const struct collector *c)
{
	uint64_t st[PBP_STAT__COUNT];

	sampler_stats(c->smp, st);
	fprintf(stderr, "  kernel walk   %llu frames from %llu data-stack copies, %llu read one by one; "
		"code objects %llu from the kernel's cache, %llu read\n",
		(unsigned long long)st[PBP_STAT_BULK_FRAMES], (unsigned long long)st[PBP_STAT_BULK_READS],
		(unsigned long long)st[PBP_STAT_FRAME_READS], (unsigned long long)st[PBP_STAT_CODE_HITS],
		(unsigned long long)st[PBP_STAT_CODE_MISSES]);
}

static void print_stats(struct session *r)
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
			"the tick; %llu switches after the tick instant, %llu states older than the "
			"kernel's record of %d switches (guessed)\n",
			(unsigned long long)c->reused, (unsigned long long)c->from_kernel,
			(unsigned long long)c->from_switch, (unsigned long long)c->read_now,
			(unsigned long long)c->late_switches, (unsigned long long)c->states_guessed,
			PBP_SWITCH_RING);
	if (c->o.async)
		fprintf(stderr, "  asyncio       %llu samples under a task, %llu whose task was not on "
			"their stack; %llu task lists read (%.3f s), %llu bounded failures in them\n",
			(unsigned long long)c->async.tasked, (unsigned long long)c->async.unplaced,
			(unsigned long long)c->async.graph_reads, (double)c->async.graph_ns / 1e9,
			(unsigned long long)c->async.graph_unread);
	print_kernel_walk(c);
	fprintf(stderr, "  thread lists  %llu read, %.3f s, %llu spared (their new threads had ended)\n",
		(unsigned long long)c->rescans, (double)c->rescan_ns / 1e9, (unsigned long long)c->lists_spared);
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
static void json_events(struct jsonw *w, const struct session *r)
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
		const struct skipped *k = &r->skipped[i];

		jw_int(w, "pid", k->pid);
		jw_str(w, "what", k->comm);
		jw_str(w, "python", k->version[0] ? k->version : NULL);
		jw_str(w, "error", pbp_strerror(k->err));
		jw_str(w, "detail", k->mismatch);
		jw_end_obj(w);
	}
	jw_end_arr(w);
}

/* Every end-of-run figure as one JSON object on one line of stderr (docs/usage.md: --stats=json). */
static void print_json(struct session *r)
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
	jw_u64(&w, "unowned", r->unowned);
	jw_arr(&w, "processes");
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p)
			stats_json_target(&w, &r->targets[i]);
	jw_end_arr(&w);
	json_events(&w, r);
	follow_json(&w, r);
	jw_finish(&w);
}

void session_summary(struct session *r, const struct agg *a)
{
	struct profile_meta m = { .mode = mode_name(r->c.o.mode), .hz = r->c.o.hz };

	if (r->o.stats == STATS_JSON || r->o.stats == STATS_NONE) {
		if (!r->o.quiet)
			print_warnings(r);
		if (r->o.stats == STATS_JSON)
			print_json(r);
		return;
	}
	if (!r->o.quiet) {
		print_summary(r);
		top_print(a, &m, stderr, 10);
	}
	if (r->o.stats == STATS_TEXT)
		print_stats(r);
}
