/* SPDX-License-Identifier: MIT */
/*
 * One error space: the PBP_E codes lie above every errno, so an errno that
 * strays into a return value never reads as one of ours, and the public
 * functions that fail for a system call's reason answer in PBP_E codes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aggregate/aggregate.h"
#include "read/collapsedread.h"
#include "read/pprofread.h"
#include "session/report.h"
#include "core/errors.h"
#include "core/file.h"
#include "cpython/process.h"
#include "output/formats.h"
#include "output/output.h"
#include "output/writers.h"
#include "proc/bundle.h"
#include "proc/cgroup.h"
#include "proc/discover.h"
#include "proc/elf.h"
#include "proc/remote.h"
#include "unit.h"

/* The errnos the kernel can hand back: 1 to MAX_ERRNO (4095). */
#define ERRNO_MAX 4095

/* A pid that was ours a moment ago and is reaped: no such process. */
static pid_t gone_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_codes(void)
{
	CHECK(PBP_E_BASE > EHWPOISON);          /* above every errno user space sees (133 on Linux) */
	CHECK(pbp_is_err(0));
	for (int e = PBP_E_BASE + 1; e < PBP_E_END; e++) {
		CHECK(pbp_is_err(-e));
		CHECK(strcmp(pbp_strerror(-e), "unknown error") != 0);
		for (int o = PBP_E_BASE + 1; o < e; o++)
			CHECK(strcmp(pbp_strerror(-e), pbp_strerror(-o)) != 0);
	}
	/* Memory is a resource, never I/O: top used to exit 10 when agg_merge ran out (-5 == -EIO). */
	CHECK_EQ_INT(exit_code_for(-PBP_E_NOMEM), EXIT_RESOURCES);
	CHECK_EQ_INT(exit_code_for(-PBP_E_IO), EXIT_IO);
}

static void test_errno_is_not_ours(void)
{
	int strays = 0;

	for (int e = 1; e <= PBP_E_BASE; e++) {
		if (pbp_is_err(-e) || strcmp(pbp_strerror(-e), "unknown error") != 0 ||
		    exit_code_for(-e) != EXIT_INTERNAL)
			strays++;
	}
	CHECK_EQ_INT(strays, 0);
	for (int e = 1; e <= ERRNO_MAX; e++)
		if (!pbp_is_err(pbp_err_from_errno(e, -PBP_E_IO)) || pbp_err_from_errno(e, -PBP_E_IO) >= 0)
			strays++;
	CHECK_EQ_INT(strays, 0);
	CHECK_EQ_INT(pbp_err_from_errno(EACCES, -PBP_E_IO), -PBP_E_PERM);
	CHECK_EQ_INT(pbp_err_from_errno(ENOMEM, -PBP_E_IO), -PBP_E_NOMEM);
	CHECK_EQ_INT(pbp_err_from_errno(ENFILE, -PBP_E_IO), -PBP_E_MFILE);
	CHECK_EQ_INT(pbp_err_from_errno(EIO, -PBP_E_CORRUPT), -PBP_E_CORRUPT);
}

/* A failure of a public function: negative and a PBP_E code. */
#define CHECK_FAILS_PBP(expr) do { \
	int _r = (expr); \
	CHECK(_r < 0 && pbp_is_err(_r)); \
	if (!(_r < 0 && pbp_is_err(_r))) \
		fprintf(stderr, "  %s returned %d\n", #expr, _r); \
} while (0)

static void test_failures_are_codes(void)
{
	pid_t gone = gone_pid();
	char buf[256];
	struct cgroup_info cg;
	struct elf_info ei;
	struct kube_meta km;
	struct output out;
	struct pyproc *p = NULL;
	struct pyproc_limits lim = { .cache_pages = 4, .code_entries = 16, .code_bytes = 4096 };
	struct remote *r = remote_open(gone, 4);
	struct agg *a = agg_new();
	struct profile_meta m;
	const char *why = NULL;
	static const uint8_t junk[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f };
	uint64_t word;

	memset(&m, 0, sizeof(m));
	CHECK_FAILS_PBP(proc_argv(gone, buf, sizeof(buf)));
	CHECK_FAILS_PBP(proc_cmdline(gone, buf, sizeof(buf)));
	CHECK_FAILS_PBP(cgroup_read(gone, &cg));
	CHECK_FAILS_PBP(pyproc_open(gone, &lim, &p));
	if (p)
		pyproc_close(p);        /* its contract: closed by the caller, even on failure */
	CHECK(r != NULL);
	if (r) {
		CHECK_FAILS_PBP(remote_read(r, 0x1000, &word, sizeof(word)));
		remote_close(r);
	}
	CHECK_FAILS_PBP(elf_find_python("/nonexistent/libpython.so", &ei));
	CHECK_FAILS_PBP(bundle_read("/nonexistent", "0123456789abcdef", &km));
	{
		char *text;
		size_t len;

		CHECK_FAILS_PBP(file_read("/nonexistent/file", 16, &text, &len));
		CHECK_FAILS_PBP(file_read_fd(-1, 16, &text, &len));
	}
	CHECK_FAILS_PBP(output_open(&out, "/nonexistent/dir/out.txt", false));
	CHECK_FAILS_PBP(profile_write(format_by_name("collapsed"), a, &m, "/nonexistent/dir/p.txt"));
	CHECK_FAILS_PBP(pprof_read(a, junk, sizeof(junk), &why));
	agg_free(a);
}

int main(void)
{
	test_codes();
	test_errno_is_not_ours();
	test_failures_are_codes();
	return unit_done("errors");
}
