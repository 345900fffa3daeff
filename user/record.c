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
#define LAUNCH_WAIT_NS (10 * 1000000000ull)
#define MAX_LOCS (PBP_MAX_DEPTH + 4)
#define MAX_CATCH_UP 10         /* ticks run at once when the loop fell behind */
/*
 * Changing a perf event's period restarts its timer and drops the part of a
 * period already run: re-draw seldom enough that this costs < 1% of samples.
 */
#define JITTER_MIN_NS 1000000000ull
#define RESCAN_EVERY_NS 1000000000ull
#define JITTER_PERIODS 64

struct record {
	/* options */
	pid_t pids[MAX_TARGETS];
	int npids;
	double duration;
	const char *outpath;
	int format;
	bool stats, quiet, verbose;
	char **cmd;
	/* state */
	struct collector c;
	pid_t child;
	struct target targets[MAX_TARGETS];
	int ntargets;
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

enum { OPT_STATS = 1000, OPT_VERBOSE, OPT_STATUS };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Targets:", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Profile these processes (repeatable)", 1 },
	{ NULL, 0, NULL, 0, "Sampling:", 2 },
	{ "mode", 'm', "MODE", 0,
	  "What a sample counts: cpu (threads on a CPU; default), wall (every thread at every "
	  "tick), gil (the thread holding the GIL)", 2 },
	{ "frequency", 'F', "HZ", 0,
	  "Samples per second: of CPU time per thread in cpu mode, ticks in wall and gil modes "
	  "(default 99)", 2 },
	{ "duration", 'd', "SECONDS", 0,
	  "Stop after this long (default: Ctrl-C, SIGTERM, or every target exited)", 2 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "output", 'o', "FILE", 0, "Write the profile here (default: stdout)", 3 },
	{ "format", 'f', "FORMAT", 0, "Output format (default: from the -o extension, else collapsed)", 3 },
	{ "threads", 't', NULL, 0, "Add a root frame per thread: 'thread TID name'", 3 },
	{ "status", OPT_STATUS, NULL, 0,
	  "Add a leaf frame with the thread's status: [running], [native, no GIL], [runnable], "
	  "[gil wait], [sleeping], [disk]", 3 },
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
	case 'm':
		if (strcmp(arg, "cpu") == 0)
			r->c.o.mode = MODE_CPU;
		else if (strcmp(arg, "wall") == 0)
			r->c.o.mode = MODE_WALL;
		else if (strcmp(arg, "gil") == 0)
			r->c.o.mode = MODE_GIL;
		else
			argp_error(st, "invalid mode '%s' (cpu, wall or gil)", arg);
		break;
	case 'f':
		r->format = format_by_name(arg);
		if (r->format < 0)
			argp_error(st, "unknown format '%s'", arg);
		break;
	case 'F':
		r->c.o.hz = (unsigned)strtoul(arg, &end, 10);
		if (*end || r->c.o.hz < 1 || r->c.o.hz > 100000)
			argp_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
		break;
	case 'd':
		r->duration = strtod(arg, &end);
		if (*end || !(r->duration > 0))
			argp_error(st, "invalid duration '%s'", arg);
		break;
	case 'o': r->outpath = arg; break;
	case 't': r->c.o.per_thread = true; break;
	case OPT_STATUS: r->c.o.status = true; break;
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
	"  sudo pybpfprof -p 1234 -m wall --status -t -o wall.txt\n"
	"  flamegraph.pl profile.txt > profile.svg";

/* ------------------------------------------------------------- targets */

static struct target *target_of(struct record *r, pid_t pid)
{
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].pid == pid)
			return &r->targets[i];
	return NULL;
}

/* A zombie has exited: its parent just has not reaped it yet. */
static bool alive(pid_t pid)
{
	return proc_state(pid) != '?' && proc_state(pid) != 'Z' && proc_state(pid) != 'X';
}

static void on_sample(void *ctx, const struct pbp_sample *ks)
{
	struct record *r = ctx;
	struct target *t = target_of(r, (pid_t)ks->tgid);

	if (t && t->alive)
		target_on_sample(&r->c, t, ks);
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
			/* 125-127: the child already said why it could not run the command. */
			if (WIFEXITED(status) && WEXITSTATUS(status) >= 125)
				return -PBP_E_CHILD;
			return -PBP_E_NOTPY;
		}
		if ((err != -PBP_E_NOTPY && err != -PBP_E_FAULT) || now_ns() > deadline)
			return err;
		usleep(200);
	}
	t->pid = r->child;
	r->ntargets = 1;
	return target_init(&r->c, t);
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
		bool up = t->pid == r->child ? r->child != 0 : alive(t->pid);

		if (t->alive && !up) {
			t->alive = false;
			sampler_del_proc(r->c.smp, t->pid);
		}
		n += t->alive;
	}
	return n;
}

static void live_line(struct record *r, uint64_t now)
{
	uint64_t st[PBP_STAT__COUNT];
	double secs = (double)(now - r->start_ns) / 1e9;
	uint64_t n = agg_total(r->c.agg);

	sampler_stats(r->c.smp, st);
	fprintf(stderr, "\r\033[Kpybpfprof: %.0f s, %llu samples, %.0f/s, %llu lost", secs,
		(unsigned long long)n, secs > 0 ? (double)n / secs : 0.0,
		(unsigned long long)st[PBP_STAT_LOST]);
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

static uint64_t jitter_every(unsigned hz)
{
	uint64_t n = JITTER_PERIODS * (1000000000ull / hz);

	return n > JITTER_MIN_NS ? n : JITTER_MIN_NS;
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

	while (!stop_signal) {
		uint64_t now = now_ns();
		int wait = ticking ? (int)((next_tick > now ? next_tick - now : 0) / 1000000) : 50;

		sampler_poll(r->c.smp, wait < 50 ? wait : 50);
		now = now_ns();
		if (deadline && now >= deadline)
			break;
		if (ticking)
			run_ticks(r, now, &next_tick);
		if (!any_alive(r))
			break;
		if (now >= next_rescan) {
			/* New threads that never ran, and renamed ones: the kernel cannot tell us. */
			for (int i = 0; i < r->ntargets; i++)
				if (r->targets[i].alive)
					target_rescan(&r->c, &r->targets[i]);
			next_rescan = now + RESCAN_EVERY_NS;
		}
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
	while (sampler_poll(r->c.smp, 0) > 0)
		;
	r->end_ns = now_ns();
	if (tty)
		fputs("\r\033[K", stderr);
}

static const char *mode_name(enum pbp_mode m)
{
	return m == MODE_WALL ? "wall" : m == MODE_GIL ? "gil" : "cpu";
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
	if (c->o.mode != MODE_CPU)
		fprintf(stderr, "pybpfprof: %llu ticks (%llu dropped, the loop fell behind)\n",
			(unsigned long long)c->ticks, (unsigned long long)c->late_ticks);
	for (int i = 0; i < r->ntargets; i++)
		target_print_threads(c, &r->targets[i], stderr);
}

static void print_stats(struct record *r)
{
	const struct collector *c = &r->c;
	double ns = (double)(agg_total(c->agg) ? agg_total(c->agg) : 1);

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
	if (c->o.mode != MODE_CPU)
		fprintf(stderr, "  tick stacks   %llu reused (thread had not run), %llu from the kernel "
			"(on CPU), %llu read at the tick; %llu switches after the tick instant\n",
			(unsigned long long)c->reused, (unsigned long long)c->from_kernel,
			(unsigned long long)c->read_now, (unsigned long long)c->late_switches);
	fprintf(stderr, "  samples       %llu outside Python code, %llu of non-Python threads, "
		"%llu frames unnamed\n", (unsigned long long)c->sym.no_python,
		(unsigned long long)c->dropped, (unsigned long long)c->sym.unknown_frames);
	fprintf(stderr, "  aggregate     %u distinct stacks, %u locations\n", agg_nstacks(c->agg),
		agg_nlocs(c->agg));
}

static int write_output(struct record *r)
{
	struct profile_meta m = { .mode = mode_name(r->c.o.mode), .hz = r->c.o.hz,
				  .start_unix_ns = r->start_unix_ns,
				  .duration_ns = r->end_ns - r->start_ns };
	int fmt = r->format >= 0 ? r->format : format_by_path(r->outpath);
	struct output out;
	int err = output_open(&out, r->outpath);

	if (!err && format_write(fmt, r->c.agg, &m, out.f) != 0)
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
	for (int i = 0; i < r->ntargets; i++)
		target_fini(&r->c, &r->targets[i]);
	sampler_close(r->c.smp);
	agg_free(r->c.agg);
	free(r->c.locs);
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
		fprintf(stderr, "pybpfprof: '%s': %s\n", r->cmd[0], pbp_strerror(err));
		return exit_code_for(err);
	}
	return 0;
}

static int run(struct record *r, int *go_fd)
{
	int code, err;

	if (!r->cmd && (code = open_targets(r)) != 0)
		return code;
	err = sampler_open(&r->c.smp, r->c.o.hz, r->c.o.mode != MODE_CPU, on_sample, r);
	if (err)
		return report_sampler_error(err);
	for (int i = 0; i < r->ntargets; i++)
		if ((err = target_init(&r->c, &r->targets[i])) != 0)
			return report_sampler_error(err);
	if (r->cmd && (code = start_command(r, go_fd)) != 0)
		return code;
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
	struct record r = { .format = -1, .c.o = { .mode = MODE_CPU, .hz = 99 } };
	int go_fd = -1, code;

	argp_parse(&argp, argc, argv, 0, NULL, &r);
	sampler_verbose(r.verbose);
	r.c.agg = agg_new();
	r.c.locs = malloc(sizeof(*r.c.locs) * MAX_LOCS);
	if (!r.c.agg || !r.c.locs) {
		fprintf(stderr, "pybpfprof: out of memory\n");
		return EXIT_INTERNAL;
	}
	install_signals();
	code = run(&r, &go_fd);
	cleanup(&r, go_fd);
	return code;
}
