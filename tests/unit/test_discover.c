/* SPDX-License-Identifier: MIT */
/*
 * discover_pythons on real children (a python3.11 and a sleep), proc_cmdline
 * on them, and proc_filter_match on synthetic inputs.
 */
#include <regex.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/errors.h"
#include "proc/cgroup.h"
#include "proc/discover.h"
#include "proc/procfs.h"
#include "unit.h"

#define PYTHON "/usr/bin/python3.11"
#define MAXP 65536

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Until the child has exec'd, its maps are still ours; and exec switches
 * /proc/PID/exe before it maps the binary. The command line is set up last
 * (after the mappings): wait for it.
 */
static bool wait_cmdline(pid_t pid, const char *want)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	char buf[256];

	for (int i = 0; i < 300; i++) {
		if (proc_cmdline(pid, buf, sizeof(buf)) > 0 && strcmp(buf, want) == 0)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

static bool listed(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

static int asked;

/* Every pid but *ctx is looked at. */
static bool look_not(void *ctx, pid_t pid)
{
	asked++;
	return pid != *(pid_t *)ctx;
}

static void test_discover(void)
{
	char *py_argv[] = { PYTHON, "-c", "import time; time.sleep(5)", NULL };
	char *sl_argv[] = { "/bin/sleep", "5", NULL };
	pid_t *pids = calloc(MAXP, sizeof(*pids));
	pid_t py, sl, one;
	char cmd[256];
	size_t n = 0;

	if (access(PYTHON, X_OK) != 0) {
		fprintf(stderr, "no %s: discovery not tested\n", PYTHON);
		free(pids);
		return;
	}
	py = spawn(py_argv);
	sl = spawn(sl_argv);
	CHECK(py > 0 && sl > 0);
	CHECK(wait_cmdline(py, PYTHON " -c import time; time.sleep(5)"));
	CHECK(wait_cmdline(sl, "/bin/sleep 5"));

	CHECK_EQ_INT(discover_pythons(pids, MAXP, &n, NULL, NULL), 0);
	CHECK(listed(pids, n, py));
	CHECK(!listed(pids, n, sl));
	CHECK(!listed(pids, n, getpid()));
	CHECK(!listed(pids, n, 2));     /* kthreadd, when we see the host's */

	/* a pid the caller does not look at is not listed: its maps are never read */
	asked = 0;
	CHECK_EQ_INT(discover_pythons(pids, MAXP, &n, look_not, &py), 0);
	CHECK(!listed(pids, n, py));
	CHECK(asked > 0);

	/* too small a buffer: says so, fills it */
	if (n >= 1) {
		CHECK_EQ_INT(discover_pythons(&one, 0, &n, NULL, NULL), 1);
		CHECK_EQ_INT(n, 0);
	}

	CHECK_EQ_INT(proc_cmdline(py, cmd, sizeof(cmd)), (int)strlen(PYTHON " -c import time; time.sleep(5)"));
	CHECK_EQ_STR(cmd, PYTHON " -c import time; time.sleep(5)");
	CHECK_EQ_INT(proc_cmdline(py, cmd, 8), 7);
	CHECK_EQ_STR(cmd, "/usr/bi");
	CHECK_EQ_INT(proc_cmdline(py, cmd, 1), 0);
	CHECK_EQ_STR(cmd, "");
	CHECK_EQ_INT(proc_cmdline(py, cmd, 0), 0);
	CHECK_EQ_INT(proc_cmdline(sl, cmd, sizeof(cmd)), 12);
	CHECK_EQ_STR(cmd, "/bin/sleep 5");

	reap(py);
	reap(sl);
	CHECK_EQ_INT(proc_cmdline(py, cmd, sizeof(cmd)), -PBP_E_NOENT);
	CHECK_EQ_INT(discover_pythons(pids, MAXP, &n, NULL, NULL), 0);
	CHECK(!listed(pids, n, py));
	free(pids);
}

/* A trailing NUL and odd bytes in an argument: one clean line. */
static void test_cmdline_self(void)
{
	char cmd[4096];
	int n = proc_cmdline(getpid(), cmd, sizeof(cmd));

	CHECK(n > 0);
	CHECK_EQ_INT(strlen(cmd), n);
	CHECK(cmd[n - 1] != ' ');
	CHECK(strstr(cmd, "test_discover") != NULL);
}

static struct cgroup_info mkcg(const char *path, const char *id)
{
	struct cgroup_info c;

	memset(&c, 0, sizeof(c));
	snprintf(c.path, sizeof(c.path), "%s", path);
	snprintf(c.container_id, sizeof(c.container_id), "%s", id);
	return c;
}

static void test_filter(void)
{
	struct cgroup_info k8s = mkcg("/kubepods.slice/kubepods-burstable.slice/x.scope",
				      "3f4b8e1c9a2d7f6e5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e");
	struct cgroup_info host = mkcg("/system.slice/ssh.service", "");
	pid_t only[] = { 10, 20 }, excl[] = { 20, 30 };
	struct proc_filter f;
	regex_t re;

	/* no filter, or an empty one: everything */
	CHECK(proc_filter_match(NULL, 1, NULL, NULL));
	memset(&f, 0, sizeof(f));
	CHECK(proc_filter_match(&f, 1, NULL, NULL));
	CHECK(proc_filter_match(&f, 1, "python3", &host));

	/* --comm: extended regex, unanchored unless anchored */
	CHECK_EQ_INT(regcomp(&re, "^(python|uwsgi)", REG_EXTENDED | REG_NOSUB), 0);
	f.comm_re = &re;
	CHECK(proc_filter_match(&f, 1, "python3.11", &host));
	CHECK(proc_filter_match(&f, 1, "uwsgi", NULL));
	CHECK(!proc_filter_match(&f, 1, "gunicorn", &host));
	CHECK(!proc_filter_match(&f, 1, "mypython", &host));
	CHECK(!proc_filter_match(&f, 1, NULL, &host));
	f.comm_re = NULL;

	/* --cgroup: a prefix of the path */
	f.cgroup_prefix = "/kubepods.slice/";
	CHECK(proc_filter_match(&f, 1, "python", &k8s));
	CHECK(!proc_filter_match(&f, 1, "python", &host));
	CHECK(!proc_filter_match(&f, 1, "python", NULL));
	f.cgroup_prefix = "/";
	CHECK(proc_filter_match(&f, 1, "python", &host));
	f.cgroup_prefix = NULL;

	/* --container: a prefix of the id; no container never matches */
	f.container_prefix = "3f4b8e";
	CHECK(proc_filter_match(&f, 1, "python", &k8s));
	CHECK(!proc_filter_match(&f, 1, "python", &host));
	CHECK(!proc_filter_match(&f, 1, "python", NULL));
	f.container_prefix = "3f4b8f";
	CHECK(!proc_filter_match(&f, 1, "python", &k8s));
	f.container_prefix = "";
	CHECK(proc_filter_match(&f, 1, "python", &k8s));
	CHECK(!proc_filter_match(&f, 1, "python", &host));
	f.container_prefix = NULL;

	/* --pid and --exclude-pid: exclusion wins */
	f.only = only;
	f.nonly = 2;
	CHECK(proc_filter_match(&f, 10, NULL, NULL));
	CHECK(proc_filter_match(&f, 20, NULL, NULL));
	CHECK(!proc_filter_match(&f, 30, NULL, NULL));
	f.exclude = excl;
	f.nexclude = 2;
	CHECK(proc_filter_match(&f, 10, NULL, NULL));
	CHECK(!proc_filter_match(&f, 20, NULL, NULL));
	f.nonly = 0;
	CHECK(proc_filter_match(&f, 40, NULL, NULL));
	CHECK(!proc_filter_match(&f, 30, NULL, NULL));

	/* all together: every one must hold */
	f.comm_re = &re;
	f.cgroup_prefix = "/kubepods";
	f.container_prefix = "3f4b";
	CHECK(proc_filter_match(&f, 40, "python", &k8s));
	CHECK(!proc_filter_match(&f, 40, "ruby", &k8s));
	CHECK(!proc_filter_match(&f, 30, "python", &k8s));
	CHECK(!proc_filter_match(&f, 40, "python", &host));
	regfree(&re);
}

/* A thread's command name, the filter --comm matches: whole, cut to the buffer, or "" when gone. */
static void test_comm(void)
{
	char comm[32] = "x", small[5];
	pid_t gone = spawn((char *[]){ "/bin/true", NULL });

	CHECK_EQ_INT(prctl(PR_SET_NAME, "pbp comm test", 0, 0, 0), 0);
	proc_thread_comm(getpid(), getpid(), comm, sizeof(comm));
	CHECK_EQ_STR(comm, "pbp comm test");
	proc_thread_comm(getpid(), getpid(), small, sizeof(small));
	CHECK_EQ_STR(small, "pbp ");
	proc_thread_comm(getpid(), getpid(), comm, 0);     /* nothing written */
	CHECK_EQ_STR(comm, "pbp comm test");
	reap(gone);
	proc_thread_comm(gone, gone, comm, sizeof(comm));
	CHECK_EQ_STR(comm, "");
}

int main(void)
{
	test_comm();
	test_filter();
	test_cmdline_self();
	test_discover();
	return unit_done("discover");
}
