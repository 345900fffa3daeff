/* SPDX-License-Identifier: MIT */
/*
 * One profiling run: which processes (the -p list, -a's filters, a
 * launched command and its tree), how they are sampled, and the loop that
 * takes the kernel's samples in and closes windows of their aggregate for
 * the sinks a command adds. The commands (record, top, the agent) fill in
 * a struct session_opts, then: session_new, session_start, their sinks
 * and timers, session_run, session_close_run, session_stop, session_free.
 */
#ifndef PBP_SESSION_SESSION_H
#define PBP_SESSION_SESSION_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "sample/loop.h"
#include "sample/target.h"

struct agg;
struct cgroup_info;
struct proc_meta;

#define MAX_PIDS 1024           /* -p lists and --exclude-pid lists */
#define HOST_HZ 19              /* -a default: a whole host, every process */
/* -d: what the clock can time (a deadline in ns) and the loop can honour. */
#define MIN_DURATION 0.001
#define MAX_DURATION 31536000.0    /* a year */

/*
 * The end-of-run figures: the human summary (default), with the cache and
 * read statistics (text), as one JSON line instead (json), or none.
 */
enum stats_form { STATS_SUMMARY, STATS_TEXT, STATS_JSON, STATS_NONE };

/* What to profile, and how: the options, as parsed. */
struct session_opts {
	struct profile_opts sampling;   /* mode, frequency, the frames a sample gets */
	pid_t pids[MAX_PIDS], excluded[MAX_PIDS];
	int npids, nexcluded;
	bool all, hz_given;
	const char *comm_re, *cgroup, *container;
	regex_t comm_regex;     /* compiled comm_re: the session frees it */
	int max_processes;      /* 0: the default */
	/*
	 * The agent's --rescan: -a's look at every target's life and the
	 * labels' refresh, and -a's thread names twice as often; 0: run.h's
	 * periods (a minute, and 30 s for the names).
	 */
	uint64_t rescan_ns;
	double duration;        /* seconds, 0: until stopped */
	const char *outpath;    /* the profile file, NULL: stdout */
	bool no_output;         /* the agent: no profile file, its sinks take the windows */
	int format;             /* -1: from outpath */
	enum stats_form stats;
	bool quiet, verbose;
	char **cmd;             /* the command to launch, NULL: none */
	int subprocesses;       /* --subprocesses 1, --no-subprocesses -1, neither 0 */
	int command_out;        /* > 0: the launched command's stdout and stderr (top's full screen) */
	bool follow;            /* descendants are followed: a command's by default */
	/*
	 * The node agent's labels for a process (its service, Kubernetes names),
	 * added to what m holds already (pid, version, container id, pod uid);
	 * strings need to live until the call returns only. NULL: none.
	 */
	void (*describe)(void *ctx, pid_t pid, const struct cgroup_info *cg, struct proc_meta *m);
	void *describe_ctx;
	/*
	 * What a process root says after its ids (called with describe_ctx):
	 * the agent's script name, as command lines may hold secrets. NULL: the
	 * command line.
	 */
	void (*process_name)(void *ctx, pid_t pid, char *out, size_t len);
};

/* What a running session can tell. */
struct session_stats {
	enum pbp_mode mode;
	unsigned hz;                    /* as sampled: it may be capped below the asked one */
	uint64_t start_ns, end_ns;      /* monotonic: the loop's start, its end (0 until then) */
	uint64_t start_unix_ns;         /* the wall clock at the start */
	int processes;                  /* live targets */
	bool no_gil;                    /* at least one, and every one a free-threaded build */
	uint64_t reads;                 /* reads of the targets' memory, of those gone included */
	uint64_t kernel[PBP_STAT__COUNT];       /* the sampler's counters (PBP_STAT_*) */
};

/* What the agent publishes each second: a few figures, one kernel counter read. */
struct session_counts {
	int processes;                  /* live targets */
	uint64_t reads;                 /* as session_stats */
	uint64_t lost;                  /* kernel[PBP_STAT_LOST] */
	/* Thread names: registry reads, and threads' names checked alone or not looked at (target.h). */
	uint64_t name_reads, names_checked, names_unsampled;
	uint64_t lists_spared;          /* list reads adopted threads asked for, not made: all ended (target.h) */
	uint64_t labels_made, labels_kept;      /* targets' labels made, and found unchanged at a look */
};

struct session;

/*
 * The buffers a run needs, for the options o (comm_regex taken over).
 * 0 or an exit code, said; *s is set either way (NULL when not even it
 * was made) and goes to session_free.
 */
int session_new(struct session_opts *o, struct session **s);
/* Checks, targets, output, sampler, discovery, the command started, privileges dropped: 0 or an exit code. */
int session_start(struct session *s);
/* A sink for every window closed (sample/loop.h): -PBP_E_LIMIT when there are too many. */
int session_add_sink(struct session *s, const struct window_sink *k);
/*
 * Windows closed during the run keep the aggregate's locations for the
 * next one (agg_reset_stacks): for sinks that only merge the window.
 */
void session_keep_locations(struct session *s);
/* A timer of the loop (sample/loop.h), its ctx the caller's: the table's copy, NULL when full. */
struct timer *session_add_timer(struct session *s, const struct timer *t);
/* A descriptor whose input wakes the loop at once: 0 or -PBP_E_*. */
int session_wake_on(struct session *s, int fd);
/* Sample until a timer or a signal ends it; samples still in the ring buffer taken in. */
void session_run(struct session *s);
/* The window closes at end_ns and goes to every sink: 0 or the first sink's -PBP_E_*. */
int session_close(struct session *s, uint64_t end_ns, bool last);
/*
 * After session_run: 0, or the exit code (said) of a launched command
 * --subprocesses never found Python in, nor anything it started.
 */
int session_check_profiled(struct session *s);
/*
 * The run's last window closes at its end; drop_root: without its process
 * root when it followed one process's tree (as without following). 0 or -PBP_E_*.
 */
int session_close_run(struct session *s, bool drop_root);
/* A followed tree of one process: its root frame is dropped from the profile. */
bool session_one_root(const struct session *s);
/*
 * The profile of a (a window w of the run) into the -o file or stdout, in
 * the format asked for; times: with when each sample was taken, where the
 * format shows it. 0 or -PBP_E_*, said.
 */
int session_write(struct session *s, const struct agg *a, const struct window *w, bool times);
/* The end-of-run summary and --stats for a, on stderr. */
void session_summary(struct session *s, const struct agg *a);
/* -a: processes skipped for --max-processes may fit now, and those missed are found. */
void session_rediscover(struct session *s);
void session_stats(const struct session *s, struct session_stats *st);
void session_counts(const struct session *s, struct session_counts *c);
/*
 * The run is over: a launched command still at work stopped, the targets
 * and the sampler closed. Returns code, or when it is 0 and a launched
 * command was reaped, the command's own status (as time(1) does).
 */
int session_stop(struct session *s, int code);
/* Stopped first if it was not. */
void session_free(struct session *s);

#endif /* PBP_SESSION_SESSION_H */
