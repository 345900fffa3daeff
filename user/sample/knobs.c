/* SPDX-License-Identifier: MIT */
/*
 * The BPF object's knobs and programs from the options (knobs.h).
 */
#include <unistd.h>
#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "sample/knobs.h"
#include "sample/sampler.h"
#include "proc/pidns.h"
#include "profile.skel.h"

void knobs_set(struct profile_bpf *skel, const struct sampler_opts *o, uint64_t period_ns,
	       unsigned budget_pct)
{
	long tick = sysconf(_SC_CLK_TCK);
	int ncpu = libbpf_num_possible_cpus();

	skel->rodata->wake_bytes = bpf_map__max_entries(skel->maps.events) / 4;
	/* Each CPU asks after a share of a quarter of wake_bytes: the overshoot stays within that quarter. */
	skel->rodata->wake_check_bytes = skel->rodata->wake_bytes / 4 / (ncpu > 0 ? (unsigned)ncpu : 1);
	skel->rodata->ns_inum = pidns_self_inum();
	skel->rodata->walk_budget_ns = PBP_BUDGET_WINDOW_NS * budget_pct / 200;
	/* Switch-out copies of stacks: on average no more than one per thread per tick. */
	if (o->sched)
		skel->rodata->snap_gap_ns = period_ns;
	/* Only the modes that look at off-CPU threads pay for the scheduler hook. */
	bpf_program__set_autoload(skel->progs.on_switch, o->sched);
	bpf_program__set_autoload(skel->progs.on_wakeup, o->sched);
	bpf_program__set_autoload(skel->progs.on_fork, o->sched || o->follow || o->execs);
	bpf_program__set_autoload(skel->progs.on_rename, o->renames);
	skel->rodata->renames = o->renames;
	if (tick > 0)
		skel->rodata->ns_per_tick = 1000000000ull / (uint64_t)tick;
	skel->rodata->thread_events = o->sched;
	skel->rodata->follow = o->follow;
	skel->rodata->all_execs = o->execs;
	skel->rodata->wake_new_threads = !o->late_threads;
	skel->rodata->ustack_bytes = o->ustack_bytes;
	skel->rodata->ustack_fp = o->ustack_fp;
	skel->rodata->want_regs = o->regs || o->ustack_bytes > 0 || o->ustack_fp;
	skel->rodata->entry_marks = o->ustack_bytes > 0 || o->ustack_fp;
	skel->rodata->kernel_stacks = o->kernel;
	/* Without --kernel the stack map is never written: no memory for it (64 frames a slot). */
	if (!o->kernel)
		bpf_map__set_max_entries(skel->maps.kstacks, 1);
}
