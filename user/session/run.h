/* SPDX-License-Identifier: MIT */
/*
 * The insides of a session (session.h), shared by the files of session/
 * alone: its options, state and tuning (session.c: set-up, the loop and its end;
 * timers.c: the loop's timers; targets.c: the processes it profiles;
 * events.c: what the kernel says of them; follow.c: --subprocesses;
 * launch.c: the launched command;
 * summary.c: what it says at the end).
 */
#ifndef PBP_SESSION_RUN_H
#define PBP_SESSION_RUN_H

#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "aggregate/timeline.h"
#include "core/limits.h"
#include "cpython/process.h"
#include "output/output.h"
#include "proc/srcroot.h"
#include "sample/loop.h"
#include "sample/target.h"
#include "session/session.h"

struct agg;
struct cgroup_info;
struct proc_meta;
struct profile_meta;
struct sources;

#define DEFAULT_MAX_PROCESSES 256
#define MAX_SKIPPED 4096
#define MAX_PENDING 1024
#define MAX_DISCOVER 65536
#define LAUNCH_WAIT_NS (10 * 1000000000ull)
#define LAUNCH_POLL_MAX_US 20000
#define STOP_WAIT_MS 2000       /* a command we could not profile: SIGTERM, then SIGKILL */
#define STOP_MAX_TREE 65536     /* the processes a stopped command and its descendants count at most */
#define STOP_FREEZE_ROUNDS 64   /* walks of a forking tree before its stop, at most */
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
/* -a in cpu mode, where new threads are found by the kernel (names_late): names refresh. */
#define RESCAN_HOST_EVERY_NS 30000000000ull
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
/* -a: a node's hundreds of idle processes are not opened in /proc every few seconds each. */
#define ALIVE_HOST_EVERY_NS 60000000000ull
/* A target's labels (cgroup, command line, service) are read again this often. */
#define LABELS_EVERY_NS 60000000000ull
#define JITTER_PERIODS 64
/*
 * The safety-net look at targets' lives and the period's re-draw may come
 * this late: they ride on the loop's other wakeups (the agent's slice each
 * second, a sample batch) instead of making their own.
 */
#define LAX_NS 1000000000ull
/* An achieved rate below this share of the asked one is reported. */
#define RATE_SHORT 0.8

/* A process -a could not profile: reported once in the summary. */
struct skipped {
	pid_t pid;
	int err;
	uint32_t start;         /* its start time's low 32 bits (proc_start_time, as a rename event says it) */
	char comm[32];
	char version[24];       /* when it was the reason (or part of it): "3.15.0", else empty */
	const char *mismatch;   /* -PBP_E_CORRUPT: how its version and memory disagree (static), or NULL */
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
 * --subprocesses: a process of the followed tree, Python or not, and what
 * it gave: samples in the profile, and samples the kernel took while
 * pybpfprof did not know it as a target (it was gone before its stacks
 * were named, or the target table was full). The table keeps the first
 * MAX_PROC_NOTES processes of a run; later ones are counted only.
 */
#define MAX_PROC_NOTES 4096
struct proc_note {
	pid_t pid, parent;
	uint64_t samples, lost;
	uint64_t gone_ns;               /* its exit event, 0 while it lives */
	bool python;                    /* profiled at some point */
	char comm[16];
};

struct session {
	struct session_opts o;
	struct timeline timeline;       /* kept for a Gecko profile only (c.timeline) */
	struct output out;      /* opened before sampling starts */
	/* state */
	struct collector c;
	struct srcroots *roots;         /* html: where each target's source files are read, else NULL */
	pid_t child;
	int child_status;       /* as waitpid gives it, once child_reaped */
	bool child_reaped;
	bool cmd_stopped;       /* the run ended first (-d, --once, q) and stopped the command */
	/*
	 * The command's own exec, waited for before its first look: its event,
	 * read later, is no news about a target found after it (launch.c).
	 */
	bool launch_exec_due;
	/*
	 * target_slots: max_processes live targets, and as many exited ones
	 * whose last samples wait in the ring still (follow_drop_gone);
	 * t->p == NULL is free.
	 */
	struct target *targets;
	int target_slots;
	int ntargets;           /* slots in use or used, high-water mark */
	int *index;             /* slots by pid (targets.c): slot + 1, 0 empty */
	unsigned index_size, index_used;        /* a power of two; entries, stale ones included */
	struct skipped *skipped;
	int nskipped;
	struct pending pending[MAX_PENDING];
	int npending;
	struct exec_note execs[MAX_EXEC_NOTES];
	int nexecs;
	uint64_t start_ns, end_ns;
	uint64_t start_unix_ns;         /* the wall clock at start_ns */
	struct loop loop;
	struct proc_note *notes;        /* --subprocesses: the tree's processes */
	int nnotes;
	uint64_t unnoted;               /* processes of the tree past MAX_PROC_NOTES */
	uint64_t unowned;       /* samples delivered for no target: gone, or not known yet */
	int launch_err;                 /* the launched command given up on: why (-PBP_E_*) */
	char launch_version[24];        /* its Python version when that is why ("2.7"), else "" */
	const char *launch_mismatch;    /* how its version and memory disagree when that is why, else NULL */
	struct timer *alive_timer;      /* due at once after a target's exit */
	uint64_t next_alive_look;       /* -a: when /proc is next read for every target */
	bool trim_due;                  /* -a: targets found or freed since the heap was last trimmed */
	uint64_t next_trim;             /* ... and when it may be trimmed again */
	uint64_t next_rescan;           /* of every target's thread list */
	int go_fd;                      /* the launched command waits for a byte on it; -1: none */
	bool stopped;                   /* session_stop ran */
};

/* targets.c: the target table, and processes to look at again */
/* The caches of a process opened: -p (and -- cmd, followed children) a few, generous; -a many, small. */
extern const struct pyproc_limits run_target_limits, run_host_limits;
/* pyproc_open, refusing gil mode for a free-threaded build (-PBP_E_NOGIL). */
int run_open(const struct session *r, pid_t pid, const struct pyproc_limits *lim, struct pyproc **p);
/* The index of the table by pid, for target_slots: 0 or -PBP_E_NOMEM. */
int run_index_init(struct session *r);
/* t was given its pid (and a process): found by it from now on. */
void run_index_target(struct session *r, const struct target *t);
/* The slot that holds pid's process, the first in the table's order; NULL: none. */
struct target *run_target_of(struct session *r, pid_t pid);
int run_live_targets(const struct session *r);
/* At least one live target, and every one a free-threaded build: no GIL to count. */
bool run_all_free_threaded(const struct session *r);
/* Reads of the profiled processes' memory since the start, those of processes gone included. */
uint64_t run_process_reads(const struct session *r);
/* A zombie has exited: its parent just has not reaped it yet. */
bool pid_alive(pid_t pid);
bool pid_exists(pid_t pid);      /* pid_alive without /proc: a zombie counts */
void run_label_target(struct session *r, struct target *t);
/* At the periodic look: true when t's labels cannot have changed (no read but its cgroup's). */
bool run_labels_hold(struct session *r, struct target *t);
int run_start_target(struct session *r, struct target *t);
void run_drop_target(struct session *r, struct target *t);
/* Look at pid again shortly (just exec'd, or not Python yet); false when it is given up on. */
bool run_queue_pending(struct session *r, pid_t pid, int tries);
/* -a: a target gone; the first process left out by --max-processes is looked at again. */
void run_give_place(struct session *r);
/* A free slot for p as pid, not started yet; NULL when --max-processes live ones are taken. */
struct target *run_place_target(struct session *r, pid_t pid, struct pyproc *p);
/* A slot of the target table for p as pid, registered with the sampler; NULL (p closed) if none or failed. */
struct target *run_add_target(struct session *r, pid_t pid, struct pyproc *p);

/* events.c: what the kernel says, met with the target table and the followed tree; -a discovery */
void run_discover(struct session *r);
bool run_pending(void *ctx, struct timer *t, uint64_t now);
void run_on_sample(void *ctx, const struct pbp_sample *ks);
void run_on_proc_event(void *ctx, uint32_t kind, pid_t pid, pid_t parent, const char *comm, uint32_t start);

/* follow.c: --subprocesses, the process tree under the launched command or the -p processes */
struct proc_note *follow_note_of(struct session *r, pid_t pid);
/* A process of the tree, new to the run: noted, and followed by the kernel when root. */
void follow_add(struct session *r, pid_t pid, pid_t parent, bool root);
/* -p --subprocesses: the given processes' descendants running already, followed and profiled. */
void follow_existing(struct session *r);
/* A followed process forked pid: profiled at once if the parent is, from what is known of it. */
void follow_fork(struct session *r, pid_t pid, pid_t parent);
void follow_exit(struct session *r, pid_t pid);
void follow_counted(struct session *r, pid_t pid, uint64_t n);
/* True while a process the run was started on (the command, a -p pid) lives. */
bool follow_roots_alive(struct session *r);
/* Processes of the tree alive, Python or not. */
int follow_live(const struct session *r);
/* A target that exited: dropped (true) once its last samples had time to be named. */
bool follow_drop_gone(struct session *r, struct target *t, uint64_t now);
void follow_summary(const struct session *r);
void follow_warn_full(const struct session *r);
struct jsonw;
void follow_json(struct jsonw *w, const struct session *r);

/* launch.c: the command run under the profiler */
int launch_start(struct session *r, int *go_fd);
/* The run is over: the launched command stopped if still at work (by_signal: pybpfprof was told to stop), and reaped. */
void launch_end(struct session *r, bool by_signal);
int launch_status(const struct session *r);
/* A launched command refused for its version (err): the version kept for the message. */
void run_keep_launch_version(struct session *r, const struct pyproc *p, int err);
/* --subprocesses: true (launch_err set) when the command is not Python and started nothing. */
bool launch_given_up(struct session *r);
/* --subprocesses, at the end: 0 when something was profiled, else the exit code, said. */
int launch_check_profiled(struct session *r);
/* Reap the launched command (waitpid flags), keeping its status for our exit code: true when reaped. */
bool launch_reap(struct session *r, int flags);

/* timers.c: the loop's timers, and how it waits for samples (all but its stop flag) */
void run_add_timers(struct session *r, bool tty);
/* The live line erased (the run is over). */
void live_clear(void);

/* summary.c: the end of the run on stderr */
/* The rate the sampler achieves (it may be capped below the asked one: said once). */
unsigned run_rate_limited(struct session *r);

#endif /* PBP_SESSION_RUN_H */
