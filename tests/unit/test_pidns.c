/* SPDX-License-Identifier: MIT */
/*
 * PID namespaces: the NSpid line of a status file (one id per namespace,
 * innermost last), on real and malformed text; a process's thread map read
 * from our own /proc; root labels with a namespace id, written and read back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "proc/pidns.h"
#include "unit.h"

static pid_t ids[40];

static int parse(const char *text)
{
	memset(ids, 0, sizeof(ids));
	return nspid_parse(text, strlen(text), ids, 33);
}

static void test_nspid(void)
{
	CHECK_EQ_INT(parse("Name:\tpython3\nTgid:\t5028\nNSpid:\t5028\nNSpgid:\t5028\n"), 1);
	CHECK_EQ_INT(ids[0], 5028);
	CHECK_EQ_INT(parse("Tgid:\t5028\nNSpid:\t5028\t7\t1\nNSpgid:\t5028\n"), 3);
	CHECK_EQ_INT(ids[0], 5028);
	CHECK_EQ_INT(ids[2], 1);
	CHECK_EQ_INT(parse("NSpid:\t12\t3"), 2);            /* first line, no newline at the end */
	CHECK_EQ_INT(ids[1], 3);
	CHECK_EQ_INT(parse("Name:\tNSpid:\t4\nPid:\t9\n"), -PBP_E_CORRUPT);  /* the key only at a line's start */
	CHECK_EQ_INT(parse("Pid:\t9\n"), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse("NSpid:\n"), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse("NSpid:\t0\n"), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse("NSpid:\t-3\n"), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse("NSpid:\t12x\n"), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse("NSpid:\t99999999999999999999\n"), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse("NSpid:\t4194305\n"), -PBP_E_CORRUPT);         /* past PID_MAX_LIMIT */
	CHECK_EQ_INT(nspid_parse("NSpid:\t1\t2\t3\n", 13, ids, 2), -PBP_E_CORRUPT);   /* more levels than room */
	CHECK_EQ_INT(nspid_parse("NSpid:\t77\t8", 9, ids, 4), 1);        /* cut by len, not by NUL */
	CHECK_EQ_INT(ids[0], 77);
}

static void test_own_process(void)
{
	struct tidmap *m = tidmap_new();
	bool other = true;

	CHECK(m != NULL);
	CHECK_EQ_INT(pidns_inner_id(getpid(), getpid(), &other), getpid());
	CHECK(!other);
	CHECK_EQ_INT(tidmap_rebuild(m, getpid()), 0);
	CHECK_EQ_INT(tidmap_ours(m, getpid()), getpid());
	CHECK_EQ_INT(tidmap_ours(m, 0), 0);
	CHECK_EQ_INT(tidmap_rebuild(m, PBP_PID_MAX + 1), -PBP_E_GONE);
	CHECK_EQ_INT(tidmap_ours(m, getpid()), 0);
	tidmap_free(m);
}

static void roundtrip(const char *word, uint32_t id, uint32_t ns, const char *rest, const char *want)
{
	char buf[128];
	const char *r;
	uint32_t i, n;

	root_label(buf, sizeof(buf), word, id, ns, rest);
	CHECK_EQ_STR(buf, want);
	CHECK(root_label_parse(buf, word, &i, &n, &r));
	CHECK_EQ_INT(i, id);
	CHECK_EQ_INT(n, ns);
	CHECK_EQ_STR(r ? r : "(none)", rest ? rest : "(none)");
}

static void test_root_labels(void)
{
	const char *r;
	uint32_t id, ns;

	roundtrip("thread", 5031, 3, "worker", "thread 5031 (3 in its namespace) worker");
	roundtrip("thread", 5031, 0, "worker", "thread 5031 worker");
	roundtrip("process", 5028, 1, NULL, "process 5028 (1 in its namespace)");
	roundtrip("process", 5028, 0, "python3 app.py", "process 5028 python3 app.py");
	/* A name that only looks like the note stays part of the name. */
	CHECK(root_label_parse("thread 7 (4 in its) x", "thread", &id, &ns, &r));
	CHECK_EQ_INT(ns, 0);
	CHECK_EQ_STR(r, "(4 in its) x");
	CHECK(!root_label_parse("thread x", "thread", &id, &ns, &r));
	CHECK(!root_label_parse("threads 7", "thread", &id, &ns, &r));
	CHECK(!root_label_parse("thread 7x", "thread", &id, &ns, &r));
	CHECK(!root_label_parse("thread 99999999999", "thread", &id, &ns, &r));
	CHECK(!root_label_parse("process", "process", &id, &ns, &r));
}

int main(void)
{
	test_nspid();
	test_own_process();
	test_root_labels();
	return unit_done("test_pidns");
}
