/* SPDX-License-Identifier: MIT */
/*
 * The end-of-run figures of the sampler, the collector and each profiled
 * process as JSON members (`record --stats=json`; docs/usage.md lists the keys):
 * what the human summary and --stats print, under stable names.
 */
#include <math.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "session/statsjson.h"
#include "aggregate/aggregate.h"
#include "core/jsonw.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "proc/remote.h"
#include "sample/sampler.h"
#include "sample/target.h"

static const char *cap_name(enum sampler_cap why)
{
	return why == CAP_KERNEL ? "kernel" : why == CAP_COST ? "cost" : NULL;
}

/* --kernel: the kernel's stack ids (kept, or why not), and what user space named. */
static void stats_json_kernel(struct jsonw *w, const struct collector *c, const uint64_t *st)
{
	const struct kstack_stats *ks = kstacks_stats(c->kstacks);

	jw_obj(w, "kernel_stacks");
	jw_u64(w, "kept", st[PBP_STAT_KSTACK]);
	jw_u64(w, "collided", st[PBP_STAT_KSTACK_COLLIDED]);
	jw_u64(w, "failed", st[PBP_STAT_KSTACK_FAILED]);
	jw_u64(w, "symbols", ks->symbols);
	jw_u64(w, "stacks", ks->stacks);
	jw_u64(w, "frames", ks->frames);
	jw_u64(w, "missed", ks->missed);
	jw_u64(w, "unnamed", ks->unnamed);
	jw_num(w, "seconds", (double)ks->ns / 1e9);
	jw_end_obj(w);
}

/* The rate, the kernel's counters and the program's own clock. */
void stats_json_sampler(struct jsonw *w, const struct collector *c, const uint64_t *st)
{
	struct sampler_limit l;
	double hz, share;

	sampler_limit(c->smp, &l);
	sampler_achieved(c->smp, &hz, &share);
	jw_u64(w, "hz", c->o.hz);
	jw_u64(w, "hz_asked", l.asked);
	jw_str(w, "rate_capped", cap_name(l.why));
	jw_num(w, "interrupts_per_cpu_s", hz);
	jw_num(w, "program_cpu_share", share);
	jw_u64(w, "program_ns", st[PBP_STAT_RUN_NS]);
	jw_num(w, "interrupt_us", l.irq_ns / 1000.0);
	jw_u64(w, "fired", st[PBP_STAT_FIRED]);
	jw_u64(w, "taken", st[PBP_STAT_TAKEN]);
	jw_u64(w, "delivered", st[PBP_STAT_DELIVERED]);
	jw_u64(w, "lost", st[PBP_STAT_LOST]);
	jw_u64(w, "budget_skipped", st[PBP_STAT_BUDGET]);
	jw_u64(w, "truncated", st[PBP_STAT_TRUNCATED]);
	jw_u64(w, "faulted", st[PBP_STAT_FAULTED]);
	jw_u64(w, "snapped", st[PBP_STAT_SNAPPED]);
	jw_u64(w, "snap_lost", st[PBP_STAT_SNAP_LOST]);
	/* How the kernel read the frames: from a copy of the data stack (3.11+), or one by one. */
	jw_obj(w, "kernel_walk");
	jw_u64(w, "bulk_frames", st[PBP_STAT_BULK_FRAMES]);
	jw_u64(w, "frame_reads", st[PBP_STAT_FRAME_READS]);
	jw_u64(w, "bulk_copies", st[PBP_STAT_BULK_READS]);
	jw_u64(w, "code_hits", st[PBP_STAT_CODE_HITS]);
	jw_u64(w, "code_misses", st[PBP_STAT_CODE_MISSES]);
	jw_end_obj(w);
	if (c->kstacks)         /* --kernel only: the default key set stays as it was */
		stats_json_kernel(w, c, st);
}

/* What user space made of the samples. */
void stats_json_collector(struct jsonw *w, const struct collector *c)
{
	jw_u64(w, "completed", c->sym.completed);
	jw_u64(w, "failed", c->sym.failed);
	jw_u64(w, "short_of_root", c->sym.short_of_root);
	jw_u64(w, "elided", c->sym.elided);
	jw_u64(w, "unknown_frames", c->sym.unknown_frames);
	jw_u64(w, "no_python", c->sym.no_python);
	jw_u64(w, "stacks_reused", c->sym.reused);
	jw_u64(w, "unattributed", c->dropped);
	jw_u64(w, "ticks", c->ticks);
	jw_u64(w, "late_ticks", c->late_ticks);
	jw_obj(w, "tick_stacks");
	jw_u64(w, "reused", c->reused);
	jw_u64(w, "from_kernel", c->from_kernel);
	jw_u64(w, "from_switch", c->from_switch);
	jw_u64(w, "read_now", c->read_now);
	jw_u64(w, "late_switches", c->late_switches);
	jw_u64(w, "states_guessed", c->states_guessed);
	jw_end_obj(w);
	/* Only asked for, as the native keys below: the default key set stays as it was. */
	if (c->o.async) {
		jw_obj(w, "async");
		jw_u64(w, "tasked", c->async.tasked);
		jw_u64(w, "unplaced", c->async.unplaced);
		jw_u64(w, "waiting_task_samples", c->async.waiting);
		jw_u64(w, "waiting_task_samples_missed", c->async.missed);
		jw_u64(w, "task_lists", c->async.graph_reads);
		jw_num(w, "task_list_seconds", (double)c->async.graph_ns / 1e9);
		jw_u64(w, "task_list_unread", c->async.graph_unread);
		jw_end_obj(w);
	}
	jw_u64(w, "thread_lists", c->rescans);
	jw_num(w, "thread_list_seconds", (double)c->rescan_ns / 1e9);
	jw_u64(w, "thread_lists_spared", c->lists_spared);
	jw_u64(w, "labels_made", c->labels_made);
	jw_u64(w, "labels_kept", c->labels_kept);
	jw_u64(w, "thread_name_reads", c->name_reads);
	jw_u64(w, "thread_names_checked", c->names_checked);
	jw_u64(w, "thread_names_unsampled", c->names_unsampled);
	/* Only asked for: a run without native frames keeps the keys it always had. */
	if (c->o.native_leaf) {
		jw_u64(w, "native_leaves", c->native_leaves);
		jw_num(w, "native_leaf_seconds", (double)c->native_ns / 1e9);
	}
	if (c->o.native) {
		jw_obj(w, "native_stacks");
		jw_u64(w, "stacks", c->natstack.stacks);
		jw_u64(w, "frames", c->natstack.frames);
		jw_u64(w, "cut", c->natstack.cut);
		jw_u64(w, "unpaired", c->natstack.unpaired);
		jw_u64(w, "folded", c->natstack.folded);
		jw_u64(w, "named_again", c->natstack.cached);
		jw_u64(w, "walked_again", c->natstack.walked_again);
		jw_num(w, "seconds", (double)c->natstack.ns / 1e9);
		jw_str(w, "walk", c->o.native_fp ? "fp" : "dwarf");
		jw_end_obj(w);
	}
	if (c->natsym) {
		uint64_t files, lookups, hits;

		natsym_stats(c->natsym, &files, &lookups, &hits);
		jw_u64(w, "native_files", files);
		jw_u64(w, "native_memo_hits", hits);
	}
	jw_u64(w, "stacks", agg_nstacks(c->agg));
	jw_u64(w, "locations", agg_nlocs(c->agg));
}

/* One profiled process: its caches and reads, and its GIL in gil mode. */
void stats_json_target(struct jsonw *w, const struct target *t)
{
	const struct remote_stats *rs = remote_stats(t->p->r);
	const struct codecache_stats *cs = codecache_stats(t->p->codes);

	jw_obj(w, NULL);
	jw_int(w, "pid", t->pid);
	jw_str(w, "python", t->p->version);
	jw_u64(w, "page_hits", rs->hits);
	jw_u64(w, "page_misses", rs->misses);
	jw_u64(w, "page_evictions", rs->evictions);
	jw_u64(w, "reads", rs->reads);
	jw_u64(w, "read_bytes", rs->bytes);
	jw_u64(w, "read_faults", rs->faults);
	jw_u64(w, "code_hits", cs->hits);
	jw_u64(w, "code_misses", cs->misses);
	jw_u64(w, "code_reused", cs->stale);
	jw_u64(w, "code_unreadable", cs->bad);
	if (t->gil_addr) {
		jw_u64(w, "gil_ticks", t->gil_ticks);
		jw_u64(w, "gil_held", t->gil_held);
		jw_u64(w, "gil_contended", t->gil_contended);
	} else {        /* no GIL read (a free-threaded build has none): null, not zeros */
		jw_num(w, "gil_ticks", NAN);
		jw_num(w, "gil_held", NAN);
		jw_num(w, "gil_contended", NAN);
	}
	jw_end_obj(w);
}
