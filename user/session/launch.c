/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof [options] -- command`: the command is forked stopped before
 * exec, runs as the invoking user once the sampler is ready, becomes the
 * target once its interpreter is mapped, and its exit status is ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/privs.h"
#include "session/report.h"
#include "session/run.h"
#include "core/clock.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "output/output.h"
#include "proc/procfs.h"
#include "sample/target.h"

/* Reap the launched command, keeping its status for our own exit code. */
bool launch_reap(struct session *r, int flags)
{
	int status;

	if (r->child <= 0 || waitpid(r->child, &status, flags) != r->child)
		return false;
	r->child = 0;
	r->child_status = status;
	r->child_reaped = true;
	return true;
}

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

/*
 * Fork the command stopped before exec; it runs once the sampler is ready.
 * *exec_fd reads EOF once the child has exec'd (or exited): its write end
 * is close-on-exec.
 */
static int fork_command(struct session *r, int *go_fd, int *exec_fd)
{
	pid_t parent = getpid();
	int pipefd[2], execfd[2];
	char c;

	/* -PBP_E_IO: errno, untouched since, says why (the caller says it). */
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -PBP_E_IO;
	if (pipe2(execfd, O_CLOEXEC) != 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -PBP_E_IO;
	}
	r->child = fork();
	if (r->child < 0)
		return -PBP_E_IO;
	if (r->child == 0) {
		close(pipefd[1]);
		close(execfd[0]);
		signal(SIGPIPE, SIG_DFL);       /* ignored here (install_signals), not for the command */
		if (read(pipefd[0], &c, 1) != 1)
			_exit(125);     /* the profiler died before it was ready */
		if (r->o.command_out > 0 && (dup2(r->o.command_out, STDOUT_FILENO) < 0 ||
					   dup2(r->o.command_out, STDERR_FILENO) < 0))
			_exit(125);
		drop_to_invoking_user();
		privs_for_command();
		/*
		 * However the profiler ends, SIGKILL included, the command gets
		 * SIGTERM as on Ctrl-C or SIGTERM: it never runs on unprofiled.
		 * Set after the uid change, which clears it.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
			_exit(125);
		execvp(r->o.cmd[0], r->o.cmd);
		fprintf(stderr, "pybpfprof: cannot run '%s': %s\n", r->o.cmd[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[0]);
	close(execfd[1]);
	*go_fd = pipefd[1];
	*exec_fd = execfd[0];
	return 0;
}

/*
 * Until its exec the child is a copy of pybpfprof: looking in it for an
 * interpreter only costs time (a whole symbol table read) in which a short
 * command can run to its end unseen. EOF: exec'd, or exited.
 */
static void wait_exec(int exec_fd)
{
	char c;

	while (read(exec_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(exec_fd);
}

/* The launched command becomes a target once its interpreter is mapped. */
/* The version of a launched command refused for it, kept before its pyproc is closed. */
void run_keep_launch_version(struct session *r, const struct pyproc *p, int err)
{
	if ((err == -PBP_E_VERSION || err == -PBP_E_FREETHREADED || err == -PBP_E_NOGIL ||
	     (err == -PBP_E_CORRUPT && p && p->mismatch)) && p && p->version[0]) {
		snprintf(r->launch_version, sizeof(r->launch_version), "%s", p->version);
		r->launch_mismatch = err == -PBP_E_CORRUPT ? p->mismatch : NULL;
	}
}

/* How a reaped command ended, as the shell says it: "exited with status N", "was killed by signal N (Name)". */
static const char *child_end(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_INTERNAL);
	return buf;
}

/* Why the launched command cannot be profiled, in one line naming its version as -p does. */
static void say_refused(const struct session *r, int err)
{
	const char *stop = r->child ? "; stopping it" : "";
	char why[256];

	if (report_refusal(err, r->launch_version, r->launch_mismatch, why, sizeof(why)))
		fprintf(stderr, "pybpfprof: '%s': %s%s\n", r->o.cmd[0], why, stop);
	else if (err == -PBP_E_NOTPY && r->child_reaped)
		fprintf(stderr, "pybpfprof: '%s' %s before an interpreter was found in it: nothing "
			"profiled\n", r->o.cmd[0], child_end(r->child_status, why, sizeof(why)));
	else
		fprintf(stderr, "pybpfprof: '%s': %s%s\n", r->o.cmd[0], pbp_strerror(err), stop);
}

static int attach_child(struct session *r)
{
	uint64_t deadline = mono_ns() + LAUNCH_WAIT_NS;
	struct target *t = &r->targets[0];
	useconds_t wait_us = 200;
	int err, status;

	for (;;) {
		err = run_open(r, r->child, &run_target_limits, &t->p);
		if (!err)
			break;
		run_keep_launch_version(r, t->p, err);
		pyproc_close(t->p);
		t->p = NULL;
		if (launch_reap(r, WNOHANG)) {
			status = r->child_status;
			/* 125-127: the child already said why it could not run the command. */
			if (WIFEXITED(status) && WEXITSTATUS(status) >= 125)
				return -PBP_E_CHILD;
			return -PBP_E_NOTPY;
		}
		if ((err != -PBP_E_NOTPY && err != -PBP_E_FAULT) || mono_ns() > deadline)
			return err;
		/* An interpreter maps itself within milliseconds: look often first, then seldom. */
		usleep(wait_us);
		wait_us = wait_us < LAUNCH_POLL_MAX_US / 2 ? wait_us * 2 : LAUNCH_POLL_MAX_US;
	}
	t->pid = r->child;
	r->ntargets = 1;
	run_index_target(r, t);
	return run_start_target(r, t);
}

/*
 * --subprocesses: the command need not be Python itself (a shell, a
 * wrapper script): it is looked at now and after its exec, as a process of
 * the tree is, without holding up the loop that follows the tree.
 */
static int attach_child_follow(struct session *r)
{
	struct pyproc *p = NULL;
	struct proc_note *n;
	int err = run_open(r, r->child, &run_target_limits, &p);

	if (err) {
		run_keep_launch_version(r, p, err);
		pyproc_close(p);
		if (err != -PBP_E_NOTPY && err != -PBP_E_FAULT)
			return err;
		run_queue_pending(r, r->child, 0);
		return 0;
	}
	if (!run_add_target(r, r->child, p))
		return -PBP_E_BPF;
	if ((n = follow_note_of(r, r->child)) != NULL)
		n->python = true;
	return 0;
}

/*
 * --subprocesses: LAUNCH_WAIT_NS after the start, a command that is not
 * Python and has started nothing is given up on as without the option; one
 * with children (a shell waiting for its Python) is followed on.
 */
bool launch_given_up(struct session *r)
{
	for (int i = 0; i < r->nnotes; i++)
		if (r->notes[i].python)
			return false;
	if (r->child <= 0 || follow_live(r) > 1)
		return false;
	r->launch_err = -PBP_E_NOTPY;
	return true;
}

/* The command has not exited (its exit event not seen): it is still at work. */
static bool command_running(struct session *r)
{
	struct proc_note *n = r->o.follow ? follow_note_of(r, r->child) : NULL;
	struct target *t = run_target_of(r, r->child);

	if (n)
		return !n->gone_ns;
	return !t || t->alive;
}

/*
 * The command's descendants (its children, theirs, ...), each held by a
 * pidfd, so that a pid reused before the SIGKILL is never signalled. The
 * first is the command itself (no pidfd: it is our child, signalled by
 * pid). Kept across walks: a process found once stays known when its
 * parent has gone, and so are the children it makes after.
 */
struct stop_tree {
	pid_t *pid;
	int *fd;
	size_t n, cap;
};

static bool in_tree(void *ctx, pid_t pid)
{
	const struct stop_tree *t = ctx;

	for (size_t j = 0; j < t->n; j++)
		if (t->pid[j] == pid)
			return true;
	return false;
}

static bool tree_add(void *ctx, pid_t pid, pid_t ppid)
{
	struct stop_tree *t = ctx;
	size_t cap = t->cap ? t->cap * 2 : 64;
	pid_t *np;
	int *nf;

	(void)ppid;
	if (t->n == t->cap) {
		if (cap > STOP_MAX_TREE || !(np = realloc(t->pid, cap * sizeof(*np))))
			return false;
		t->pid = np;
		if (!(nf = realloc(t->fd, cap * sizeof(*nf))))
			return false;
		t->fd = nf;
		t->cap = cap;
	}
	t->pid[t->n] = pid;
	t->fd[t->n] = t->n ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	t->n++;
	return true;
}

static void signal_from(const struct stop_tree *t, size_t from, int sig)
{
	for (size_t i = from; i < t->n; i++)
		if (t->fd[i] >= 0)
			syscall(SYS_pidfd_send_signal, t->fd[i], sig, NULL, 0);
}

/*
 * Every descendant known stopped (SIGSTOP) where it is, walked again until
 * a walk finds none new: a tree that forks all the while cannot outrun it
 * (a child made between a walk and its parent's stop is found by the next).
 */
static void freeze(struct stop_tree *t)
{
	for (int round = 0; round < STOP_FREEZE_ROUNDS; round++) {
		size_t before = t->n;

		proc_descendants(&(struct proc_descent){ in_tree, tree_add, t });
		signal_from(t, before, SIGSTOP);
		if (t->n == before)
			break;
	}
}

/*
 * Stop the command and what it started: SIGTERM to all, SIGKILL to those
 * left after STOP_WAIT_MS (a child of the command's that outlives it would
 * go on unprofiled, as `timeout` also sees to). Each signal goes to a tree
 * frozen first, and found again before the SIGKILL: children made in the
 * grace by one that ignores SIGTERM are killed with it. reap: the
 * command's own wait, true once it is reaped.
 */
static void stop_tree(struct session *r, bool (*reap)(struct session *r))
{
	struct stop_tree t = { 0 };

	tree_add(&t, r->child, 0);
	kill(r->child, SIGSTOP);
	freeze(&t);
	kill(r->child, SIGTERM);
	signal_from(&t, 1, SIGTERM);
	kill(r->child, SIGCONT);
	signal_from(&t, 1, SIGCONT);
	for (int ms = 0; ms < STOP_WAIT_MS && !reap(r); ms += 10)
		usleep(10000);
	/* Stopped, not killed, while the tree is walked: its children still name it as their parent. */
	if (r->child > 0)
		kill(r->child, SIGSTOP);
	freeze(&t);
	if (r->child > 0)
		kill(r->child, SIGKILL);
	signal_from(&t, 1, SIGKILL);    /* those gone already: ESRCH, nothing else */
	for (size_t i = 1; i < t.n; i++)
		if (t.fd[i] >= 0)
			close(t.fd[i]);
	free(t.pid);
	free(t.fd);
}

static bool reap_now(struct session *r)
{
	return launch_reap(r, WNOHANG);
}

/* The status of a command stopped because it cannot be profiled is not ours to give. */
static bool reap_quietly(struct session *r)
{
	if (waitpid(r->child, NULL, WNOHANG) != r->child)
		return false;
	r->child = 0;
	return true;
}

/*
 * The run is over: a command still at work gets SIGTERM, then SIGKILL
 * after STOP_WAIT_MS, whatever ended the run (a signal, -d, --once, q, an
 * error), so that it never goes on unprofiled, nor does anything it
 * started; one that is exiting is waited for. by_signal: pybpfprof was
 * told to stop; otherwise the run ended by its own limit, and its exit
 * status is not the command's.
 */
void launch_end(struct session *r, bool by_signal)
{
	bool stop = r->child > 0 && !launch_reap(r, WNOHANG) && command_running(r);

	if (stop) {
		stop_tree(r, reap_now);
		r->cmd_stopped = !by_signal;
	}
	while (r->child > 0)
		if (!launch_reap(r, 0) && errno != EINTR)
			break;
}

/*
 * A command that cannot be profiled (not Python within LAUNCH_WAIT_NS, an
 * unsupported version) was started only to be profiled: stop it and say so
 * now rather than wait for it to end.
 */
static void stop_command(struct session *r)
{
	if (r->child <= 0)
		return;
	stop_tree(r, reap_quietly);
	if (r->child > 0)
		waitpid(r->child, NULL, 0);
	r->child = 0;
}

int launch_start(struct session *r, int *go_fd)
{
	int exec_fd = -1;
	int err = fork_command(r, go_fd, &exec_fd);

	if (err) {
		fprintf(stderr, "pybpfprof: cannot start '%s': %s\n", r->o.cmd[0], strerror(errno));
		return EXIT_INTERNAL;
	}
	if (r->o.follow)
		follow_add(r, r->child, 0, true);       /* before it runs: no child of it is missed */
	if (write(*go_fd, "g", 1) != 1) {
		close(exec_fd);
		return EXIT_INTERNAL;
	}
	close(*go_fd);
	*go_fd = -1;
	wait_exec(exec_fd);
	r->launch_exec_due = r->o.follow;   /* followed: its exec event is still to come */
	err = r->o.follow ? attach_child_follow(r) : attach_child(r);
	if (err == -PBP_E_CHILD)
		return EXIT_NOT_PYTHON;
	if (err) {
		say_refused(r, err);
		stop_command(r);
		return exit_code_for(err);
	}
	return 0;
}

/*
 * --subprocesses: a command never profiled, nor anything it started, is
 * not a Python process, said at the end as it is said at the start
 * without the option: 0 when something was profiled, else an exit code.
 */
int launch_check_profiled(struct session *r)
{
	int err = r->launch_err ? r->launch_err : -PBP_E_NOTPY;
	struct proc_note *n = follow_note_of(r, r->child);

	for (int i = 0; i < r->nnotes && !r->launch_err; i++)
		if (r->notes[i].python)
			return 0;
	if (r->child > 0 && n && n->gone_ns)
		launch_reap(r, 0);      /* it exited: its status says whether it ran at all */
	if (r->child_reaped && WIFEXITED(r->child_status) && WEXITSTATUS(r->child_status) >= 125)
		return EXIT_NOT_PYTHON;     /* the child already said why it could not run the command */
	say_refused(r, err);
	stop_command(r);
	return exit_code_for(err);
}

/*
 * Like time(1): once the profile is written, the launched command's own
 * status, 128 + N for a command killed by signal N, as shells report it;
 * 0 for a command the run stopped at its end (-d, --once, q).
 */
int launch_status(const struct session *r)
{
	int st = r->child_status, code;
	char why[64];

	if (r->cmd_stopped) {
		if (!r->o.quiet)
			fprintf(stderr, "pybpfprof: '%s' stopped: the run ended while it ran "
				"(SIGTERM, SIGKILL 2 s later)\n", r->o.cmd[0]);
		return 0;
	}

	code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_INTERNAL;
	if (!r->o.quiet)
		fprintf(stderr, "pybpfprof: '%s' %s\n", r->o.cmd[0], child_end(st, why, sizeof(why)));
	return code;
}
