/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_SAMPLER_H
#define PBP_SAMPLE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pybpfprof.h"

struct sampler;
typedef void (*sample_fn)(void *ctx, const struct pbp_sample *s);
/* parent: the forking process of a PBP_EV_FORK, else 0. */
/* comm: an exec's new program name, from the kernel ("" for other events). */
typedef void (*proc_event_fn)(void *ctx, uint32_t kind, pid_t pid, pid_t parent, const char *comm,
			      uint32_t start);

struct sampler_opts {
	unsigned hz;            /* asked; sampler_open lowers it to what the host sustains */
	bool sched;             /* track off-CPU state (wall and gil modes) */
	bool execs;             /* report every exec, and targets' cgroup moves (whole-host mode) */
	bool renames;           /* report renames of processes not targets (whole-host mode, --comm) */
	bool late_threads;      /* a new thread's first sample need not wake the loop (names_late) */
	bool follow;            /* follow the process trees under sampler_follow()'s roots */
	uint32_t ustack_bytes;  /* --native: user stack copied per sample (0: none) */
	bool kernel;            /* --kernel: kernel stacks of samples in the kernel and sleepers */
	bool ustack_fp;         /* --native=fp: the kernel walks frame pointers instead of copying */
	bool regs;              /* samples carry the user registers (--native-leaf); --native implies it */
	sample_fn cb;
	proc_event_fn pcb;      /* exec, exit, thread and fork events */
	void *ctx;
};

/*
 * Why and how far sampler_open lowered the rate (sampler_limit), and what
 * one sample interrupt costs on this host, measured before sampling starts.
 */
enum sampler_cap { CAP_NONE, CAP_KERNEL, CAP_COST };
struct sampler_limit {
	unsigned asked, hz;     /* per CPU: as given, and as run */
	enum sampler_cap why;
	unsigned irq_ns;        /* measured cost of one interrupt; 0: not measured */
	unsigned max_rate;      /* kernel.perf_event_max_sample_rate */
	unsigned budget_pct;    /* the sampler's share of each CPU: perf_cpu_time_max_percent */
};

/* Load the BPF side and sample every online CPU, at a rate the host sustains. */
int sampler_open(struct sampler **out, const struct sampler_opts *o);
void sampler_limit(struct sampler *s, struct sampler_limit *out);
/* Interrupts per second per CPU since sampling started; the program's share of each CPU. */
void sampler_achieved(struct sampler *s, double *per_cpu_hz, double *prog_share);
/*
 * Stop the sampling interrupts (the scheduler's programs go on): at the
 * end of a run, so that a drain then takes every sample the kernel
 * delivered and the counts add up.
 */
void sampler_pause(struct sampler *s);
/*
 * Wall and gil modes: the ticks come at base + k * period (CLOCK_MONOTONIC
 * ns); the kernel records each thread's state at the latest one before its
 * switches (pbp_tstate.tick_ns).
 */
void sampler_set_ticks(struct sampler *s, uint64_t base, uint64_t period);
void sampler_close(struct sampler *s);
void sampler_verbose(bool on);
void sampler_del_proc(struct sampler *s, pid_t pid);
/* --subprocesses: pid's new processes are followed (PBP_EV_FORK), and theirs. */
int sampler_follow(struct sampler *s, pid_t pid);
/* Deliver the process events waiting, only: a sample of a process not known yet may follow one. */
void sampler_drain_events(struct sampler *s);
/* Deliver every sample and event in the ring buffers to the callbacks; never waits. */
int sampler_drain(struct sampler *s);
/*
 * Every sample the kernel took before this instant (mono_ns) has been read:
 * the last drain that emptied the ring started then (0: none yet). A
 * process that exited earlier has no sample waiting any more.
 */
uint64_t sampler_read_upto(const struct sampler *s);
/* Wait up to ns (less if a process or thread event comes), then drain. */
int sampler_wait(struct sampler *s, uint64_t ns);
/* New input on fd (a terminal's keys) ends a wait early too: 0 or -PBP_E_*. */
int sampler_wake_on(struct sampler *s, int fd);
void sampler_stats(struct sampler *s, uint64_t out[PBP_STAT__COUNT]);
/* One counter, summed over the CPUs: what a caller asking each second needs. */
uint64_t sampler_stat(struct sampler *s, enum pbp_stat which);
/* Re-draw each CPU's sampling period around the mean (breaks aliasing). */
void sampler_jitter(struct sampler *s);

/*
 * What the per-thread state (target.c) asks of the kernel side, as a table:
 * bpf_sampler_ops below is the sampler's own, a unit test gives a fake one
 * (tests/unit/test_target.c), so target.c links without the BPF skeleton.
 */
struct sampler_ops {
	int (*add_proc)(struct sampler *s, pid_t pid, const struct pbp_proc *p);
	int (*slot_alloc)(struct sampler *s);
	void (*slot_free)(struct sampler *s, int slot);
	const volatile struct pbp_tstate *(*tstate)(struct sampler *s, int slot);
	int (*set_thread)(struct sampler *s, pid_t tid, pid_t tgid, uint64_t tstate, int slot);
	void (*del_thread)(struct sampler *s, pid_t tid);
	/* --native: the stack copy of the sample (tid, ts), or NULL (may be NULL itself). */
	const struct pbp_ustack *(*ustack)(struct sampler *s, uint32_t tid, uint64_t ts);
	/*
	 * --kernel: the kernel stack kept under id, innermost first, into
	 * ips[PBP_KSTACK_DEPTH]; its frame count, 0 when there is none (may be NULL itself).
	 */
	uint32_t (*kstack)(struct sampler *s, int32_t id, uint64_t *ips);
};

/* Stack copies kept until their samples come (other CPUs' records may come between). */
#define USTACK_SLOTS 8
const struct pbp_ustack *sampler_ustack(struct sampler *s, uint32_t tid, uint64_t ts);
uint32_t sampler_kstack(struct sampler *s, int32_t id, uint64_t *ips);

extern const struct sampler_ops bpf_sampler_ops;

#endif /* PBP_SAMPLE_SAMPLER_H */
