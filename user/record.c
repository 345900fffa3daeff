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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyprof.h"

#define MAX_TARGETS 64
#define RESCAN_NS (20 * 1000000ull)     /* least time between two thread-list reads */
#define LAUNCH_WAIT_NS (10 * 1000000000ull)
#define MAX_LOCS (PBP_MAX_DEPTH + 4)

struct target {
	pid_t pid;
	struct pyproc *p;
	bool alive;
	uint64_t last_rescan;
	struct pythread *threads, *spare;   /* the last thread list, and room for the next */
	size_t nthreads;
};

struct record {
	/* options */
	pid_t pids[MAX_TARGETS];
	int npids;
	unsigned hz;
	double duration;
	const char *outpath;
	bool per_thread, stats, quiet, verbose;
	char **cmd;
	/* state */
	pid_t child;
	struct target targets[MAX_TARGETS];
	int ntargets;
	struct sampler *smp;
	struct agg *agg;
	struct symstats sym;
	uint32_t *locs;
	uint64_t start_ns, end_ns, start_unix_ns;
	uint64_t dropped;       /* samples of threads that are not Python threads */
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

enum { OPT_STATS = 1000, OPT_VERBOSE };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Targets:", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Profile these processes (repeatable)", 1 },
	{ NULL, 0, NULL, 0, "Sampling:", 2 },
	{ "frequency", 'F', "HZ", 0, "Samples per second of CPU time per thread (default 99)", 2 },
	{ "duration", 'd', "SECONDS", 0,
	  "Stop after this long (default: Ctrl-C, SIGTERM, or every target exited)", 2 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "output", 'o', "FILE", 0, "Write the profile here (default: stdout)", 3 },
	{ "threads", 't', NULL, 0, "Add a root frame per thread: 'thread TID name'", 3 },
	{ "stats", OPT_STATS, NULL, 0, "Print cache and read statistics at the end", 3 },
	{ "quiet", 'q', NULL, 0, "No live line and no summary on stderr", 3 },
	{ "verbose", OPT_VERBOSE, NULL, 0, "Show libbpf's messages", 3 },
	{ 0 },
};

static int add_pids(struct record *r, char *arg)
{
	for (char *save = NULL, *tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		pid_t pid;

		if (parse_pid(tok, &pid) || r->npids >= MAX_TARGETS)
			return -1;
		r->pids[r->npids++] = pid;
	}
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *st)
{
	struct record *r = st->input;
	char *end;

	switch (key) {
	case 'p':
		if (add_pids(r, arg))
			argp_error(st, "invalid pid list '%s' (at most %d pids)", arg, MAX_TARGETS);
		break;
	case 'F':
		r->hz = (unsigned)strtoul(arg, &end, 10);
		if (*end || r->hz < 1 || r->hz > 100000)
			argp_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
		break;
	case 'd':
		r->duration = strtod(arg, &end);
		if (*end || !(r->duration > 0))
			argp_error(st, "invalid duration '%s'", arg);
		break;
	case 'o': r->outpath = arg; break;
	case 't': r->per_thread = true; break;
	case 'q': r->quiet = true; break;
	case OPT_STATS: r->stats = true; break;
	case OPT_VERBOSE: r->verbose = true; break;
	case ARGP_KEY_ARGS:
		r->cmd = st->argv + st->next;
		break;
	case ARGP_KEY_ARG:
		return ARGP_ERR_UNKNOWN;
	case ARGP_KEY_END:
		if (!r->npids && !r->cmd)
			argp_error(st, "give -p PID or a command after --");
		if (r->npids && r->cmd)
			argp_error(st, "-p and a command cannot be used together");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char doc[] =
	"Sample the Python stacks of running processes from the kernel, at a fixed frequency, "
	"without stopping them.\n\n"
	"Subcommands: 'pybpfprof dump -p PID' prints every thread's stack once."
	"\vExamples:\n"
	"  sudo pybpfprof -p 1234 -F 99 -d 10 -o profile.txt\n"
	"  sudo pybpfprof -o app.txt -- python3 app.py\n"
	"  flamegraph.pl profile.txt > profile.svg";

/* ------------------------------------------------------------- targets */

static struct target *target_of(struct record *r, pid_t pid)
{
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].pid == pid)
			return &r->targets[i];
	return NULL;
}

/* Kernel view of the GIL: where its locked flag and holder live. */
static void gil_addrs(struct target *t, struct pbp_proc *kp)
{
	struct gilstate g;
	uint64_t interp = 0;

	remote_ptr(t->p->r, t->p->runtime + t->p->v.rt_interpreters_head, &interp);
	if (pygil_read(t->p, interp, &g) == 0 && g.addr) {
		kp->gil_locked = g.addr + t->p->v.gil_locked;
		kp->gil_holder = g.addr + t->p->v.gil_last_holder;
	}
}

/* Read the thread list and tell the kernel each thread's state address. */
static void rescan(struct record *r, struct target *t)
{
	struct pythread *tmp;
	size_t n = 0;

	t->last_rescan = now_ns();
	if (pythreads_read(t->p, t->spare, PBP_MAX_THREADS, &n) != 0)
		return;
	/* Forget threads that ended, so a reused tid never inherits their state. */
	for (size_t i = 0; i < t->nthreads; i++) {
		bool still = false;

		for (size_t j = 0; j < n && !still; j++)
			still = t->spare[j].tid == t->threads[i].tid;
		if (!still && t->threads[i].tid)
			sampler_del_thread(r->smp, t->threads[i].tid);
	}
	tmp = t->threads, t->threads = t->spare, t->spare = tmp;
	t->nthreads = n;
	for (size_t i = 0; i < n; i++)
		if (t->threads[i].tid)
			sampler_set_thread(r->smp, t->threads[i].tid, t->pid, t->threads[i].tstate);
}

static int register_target(struct record *r, struct target *t)
{
	struct pbp_proc kp = { .off = t->p->v.k };
	int err;

	t->threads = calloc(PBP_MAX_THREADS, sizeof(*t->threads));
	t->spare = calloc(PBP_MAX_THREADS, sizeof(*t->spare));
	if (!t->threads || !t->spare)
		return -PBP_E_NOMEM;
	gil_addrs(t, &kp);
	err = sampler_add_proc(r->smp, t->pid, &kp);
	if (err)
		return -PBP_E_BPF;
	t->alive = true;
	rescan(r, t);
	return 0;
}

static bool alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* ------------------------------------------------------------- samples */

static const struct pythread *thread_of(const struct target *t, pid_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}

static int64_t thread_label(struct record *r, struct target *t, pid_t tid)
{
	char comm[32], label[96];

	proc_thread_comm(t->pid, tid, comm, sizeof(comm));
	snprintf(label, sizeof(label), "thread %d %s", (int)tid, comm[0] ? comm : "?");
	return agg_loc(r->agg, label, NULL, -1, LOC_THREAD);
}

static void on_sample(void *ctx, const struct pbp_sample *ks)
{
	struct record *r = ctx;
	struct target *t = target_of(r, (pid_t)ks->tgid);
	struct pbp_sample s;
	struct stack_tags tags = { .pid = ks->tgid, .tid = ks->tid, .status = ST_UNKNOWN };
	uint32_t n = 0, off = 0;

	if (!t || !t->alive)
		return;
	if (ks->flags & PBP_F_NO_TSTATE) {
		const struct pythread *th;

		/* A thread born since the last scan: find its state, and the kernel's next time. */
		if (now_ns() - t->last_rescan > RESCAN_NS)
			rescan(r, t);
		th = thread_of(t, (pid_t)ks->tid);
		if (!th) {
			r->dropped++;
			return;
		}
		memcpy(&s, ks, offsetof(struct pbp_sample, frames));
		s.tstate = th->tstate;
		ks = &s;
	}
	if (r->per_thread) {
		int64_t id = thread_label(r, t, (pid_t)ks->tid);

		if (id < 0)
			return;
		r->locs[off++] = (uint32_t)id;
	}
	remote_invalidate_all(t->p->r);
	symbolize(t->p, ks, r->agg, r->locs + off, MAX_LOCS - off, &n, &r->sym);
	if (n)
		agg_add(r->agg, &tags, r->locs, n + off, 1);
}

/* ------------------------------------------------------------- launch */

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
	int pipefd[2];
	char c;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -errno;
	r->child = fork();
	if (r->child < 0)
		return -errno;
	if (r->child == 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(125);     /* the profiler died before it was ready */
		drop_to_invoking_user();
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
	int err, status;

	for (;;) {
		err = pyproc_open(r->child, 1024, &t->p);
		if (!err)
			break;
		pyproc_close(t->p);
		t->p = NULL;
		if (waitpid(r->child, &status, WNOHANG) == r->child) {
			r->child = 0;
			return -PBP_E_NOTPY;
		}
		if ((err != -PBP_E_NOTPY && err != -PBP_E_FAULT) || now_ns() > deadline)
			return err;
		usleep(200);
	}
	t->pid = r->child;
	r->ntargets = 1;
	return register_target(r, t);
}

/* ------------------------------------------------------------- run */

static int open_targets(struct record *r)
{
	for (int i = 0; i < r->npids; i++) {
		struct target *t = &r->targets[r->ntargets];
		int err = pyproc_open(r->pids[i], 1024, &t->p);

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

static int any_alive(struct record *r)
{
	int n = 0, status;

	if (r->child && waitpid(r->child, &status, WNOHANG) == r->child)
		r->child = 0;
	for (int i = 0; i < r->ntargets; i++) {
		struct target *t = &r->targets[i];

		if (t->alive && (t->pid == r->child ? r->child != 0 : alive(t->pid)))
			n++;
		else if (t->alive) {
			t->alive = false;
			sampler_del_proc(r->smp, t->pid);
		}
	}
	return n;
}

static void live_line(struct record *r, uint64_t now)
{
	uint64_t st[PBP_STAT__COUNT];
	double secs = (double)(now - r->start_ns) / 1e9;

	sampler_stats(r->smp, st);
	fprintf(stderr, "\r\033[Kpybpfprof: %.0f s, %llu samples, %.0f/s, %llu lost", secs,
		(unsigned long long)st[PBP_STAT_DELIVERED],
		secs > 0 ? (double)st[PBP_STAT_DELIVERED] / secs : 0.0,
		(unsigned long long)st[PBP_STAT_LOST]);
}

static void loop(struct record *r)
{
	bool tty = !r->quiet && isatty(STDERR_FILENO);
	uint64_t deadline = r->duration > 0 ? r->start_ns + (uint64_t)(r->duration * 1e9) : 0;
	uint64_t next_live = r->start_ns + 1000000000ull;

	while (!stop_signal) {
		uint64_t now;

		sampler_poll(r->smp, 50);
		now = now_ns();
		if (deadline && now >= deadline)
			break;
		if (!any_alive(r))
			break;
		if (tty && now >= next_live) {
			live_line(r, now);
			next_live += 1000000000ull;
		}
	}
	/* Samples still in the ring buffer belong to the run. */
	while (sampler_poll(r->smp, 0) > 0)
		;
	r->end_ns = now_ns();
	if (tty)
		fputs("\r\033[K", stderr);
}

static void print_summary(struct record *r)
{
	uint64_t st[PBP_STAT__COUNT];
	double secs = (double)(r->end_ns - r->start_ns) / 1e9;

	sampler_stats(r->smp, st);
	fprintf(stderr, "pybpfprof: %llu samples in %.2f s (%.1f samples/s at %u Hz per on-CPU thread), "
		"%llu lost\n", (unsigned long long)agg_total(r->agg), secs,
		secs > 0 ? (double)agg_total(r->agg) / secs : 0.0, r->hz,
		(unsigned long long)st[PBP_STAT_LOST]);
	fprintf(stderr, "pybpfprof: kernel: %llu taken, %llu delivered; stacks: %llu deeper than %d, "
		"%llu faulted, %llu completed in user space, %llu failed\n",
		(unsigned long long)st[PBP_STAT_TAKEN], (unsigned long long)st[PBP_STAT_DELIVERED],
		(unsigned long long)st[PBP_STAT_TRUNCATED], PBP_MAX_FRAMES,
		(unsigned long long)st[PBP_STAT_FAULTED], (unsigned long long)r->sym.completed,
		(unsigned long long)r->sym.failed);
	fprintf(stderr, "pybpfprof: %llu samples outside Python code, %llu of non-Python threads, "
		"%llu frames unnamed\n", (unsigned long long)r->sym.no_python,
		(unsigned long long)r->dropped, (unsigned long long)r->sym.unknown_frames);
}

static void print_stats(struct record *r)
{
	double ns = (double)(r->sym.samples ? r->sym.samples : 1);

	for (int i = 0; i < r->ntargets; i++) {
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
	fprintf(stderr, "  aggregate     %u distinct stacks, %u locations\n", agg_nstacks(r->agg),
		agg_nlocs(r->agg));
}

static int write_output(struct record *r)
{
	struct output out;
	int err = output_open(&out, r->outpath);

	struct profile_meta m = { .mode = "cpu", .hz = r->hz, .start_unix_ns = r->start_unix_ns,
				  .duration_ns = r->end_ns - r->start_ns };

	if (!err && collapsed_write(r->agg, &m, out.f) != 0)
		err = -EIO;
	if (!err)
		err = output_commit(&out);
	else if (out.f)
		output_abort(&out);
	if (err) {
		fprintf(stderr, "pybpfprof: cannot write %s: %s\n", r->outpath ? r->outpath : "stdout",
			strerror(-err));
		return EXIT_IO;
	}
	return 0;
}

static int report_sampler_error(int err)
{
	if (-err == PBP_E_PERM)
		fprintf(stderr, "pybpfprof: not allowed to load BPF programs or open perf events "
			"(run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)\n");
	else
		fprintf(stderr, "pybpfprof: %s\n", pbp_strerror(err));
	return exit_code_for(err);
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void cleanup(struct record *r, int go_fd)
{
	if (go_fd >= 0)
		close(go_fd);   /* an unstarted child sees EOF and exits */
	if (r->child > 0 && stop_signal)
		kill(r->child, SIGTERM);
	if (r->child > 0)
		waitpid(r->child, NULL, 0);
	sampler_close(r->smp);
	for (int i = 0; i < r->ntargets; i++) {
		pyproc_close(r->targets[i].p);
		free(r->targets[i].threads);
		free(r->targets[i].spare);
	}
	agg_free(r->agg);
	free(r->locs);
}

static int run(struct record *r, int *go_fd)
{
	int code, err;

	if (!r->cmd && (code = open_targets(r)) != 0)
		return code;
	err = sampler_open(&r->smp, r->hz, on_sample, r);
	if (err)
		return report_sampler_error(err);
	for (int i = 0; i < r->ntargets; i++)
		if ((err = register_target(r, &r->targets[i])) != 0)
			return report_sampler_error(err);
	if (r->cmd) {
		if ((err = launch(r, go_fd)) != 0) {
			fprintf(stderr, "pybpfprof: cannot start '%s': %s\n", r->cmd[0], strerror(-err));
			return EXIT_INTERNAL;
		}
		if (write(*go_fd, "g", 1) != 1)
			return EXIT_INTERNAL;
		close(*go_fd);
		*go_fd = -1;
		if ((err = attach_child(r)) != 0) {
			fprintf(stderr, "pybpfprof: '%s': %s\n", r->cmd[0], pbp_strerror(err));
			return exit_code_for(err);
		}
	}
	r->start_ns = now_ns();
	r->start_unix_ns = (uint64_t)time(NULL) * 1000000000ull;
	loop(r);
	code = write_output(r);
	if (!r->quiet)
		print_summary(r);
	if (r->stats)
		print_stats(r);
	return code;
}

int record_main(int argc, char **argv)
{
	struct argp argp = { opts, parse_opt, "[-- COMMAND [ARG...]]", doc, NULL, NULL, NULL };
	struct record r = { .hz = 99 };
	int go_fd = -1, code;

	argp_parse(&argp, argc, argv, 0, NULL, &r);
	sampler_verbose(r.verbose);
	r.agg = agg_new();
	r.locs = malloc(sizeof(*r.locs) * MAX_LOCS);
	if (!r.agg || !r.locs) {
		fprintf(stderr, "pybpfprof: out of memory\n");
		return EXIT_INTERNAL;
	}
	install_signals();
	code = run(&r, &go_fd);
	cleanup(&r, go_fd);
	return code;
}
