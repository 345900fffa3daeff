/* SPDX-License-Identifier: MIT */
/*
 * The html page's source files: which (process root, file) pairs a profile
 * names, ranked by the samples through them and read hottest first within
 * the budget (read/sources.c, with a reader made up here), and the
 * reader that runs, under a process's held root and cwd (proc/srcroot.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>
#include <unistd.h>

#include "aggregate/aggregate.h"
#include "read/sources.h"
#include "core/errors.h"
#include "proc/srcroot.h"
#include "unit.h"

/* pid 1 under root 0, pid 2 under root 1, pid 3 never opened. */
static uint32_t fake_root(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 1 ? 0 : pid == 2 ? 1 : pid == 4 ? SRC_ROOTS_FULL : SRC_NO_ROOT;
}

/* Sizes by name: huge.py over the per-file cap, mN.py 500 KiB each, others a line. */
static int fake_read(void *ctx, uint32_t root, const char *path, size_t max, char **text, size_t *len,
		     size_t *size, char *why, size_t whylen)
{
	size_t n = strstr(path, "huge") ? 600u << 10 : path[0] == 'm' ? 500u << 10 : 8;

	(void)ctx, (void)root;
	*size = n;
	if (!strcmp(path, "gone.py")) {
		snprintf(why, whylen, "No such file or directory");
		return -PBP_E_NOENT;
	}
	if (n > max)
		return -PBP_E_LIMIT;
	*text = malloc(n + 1);
	memset(*text, 'x', n);
	(*text)[n] = '\0';
	*len = n;
	return 0;
}

static void add(struct agg *a, uint32_t pid, const char *const *files, uint32_t n, uint64_t count)
{
	struct stack_tags t = { .pid = pid, .tid = pid };
	uint32_t ids[8];

	for (uint32_t i = 0; i < n; i++)
		ids[i] = (uint32_t)agg_loc(a, "f", files[i], (int)i + 1, LOC_PY);
	CHECK_EQ_INT(agg_add(a, &t, ids, n, count), 0);
}

static const struct src_file *find(const struct sources *s, uint32_t root, const char *path)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->f[i].root == root && !strcmp(s->f[i].path, path))
			return &s->f[i];
	return NULL;
}

static void test_ranked_within_budget(void)
{
	struct agg *a = agg_new();
	struct sources s = { 0 };
	const struct src_reader rd = { fake_root, fake_read, NULL };
	const char *const twice[] = { "a.py", "a.py", "b.py" }, *const m[] = { "m1.py", "m2.py", "m3.py", "m4.py", "m5.py" };
	const char *const huge[] = { "huge.py" }, *const gone[] = { "gone.py" };

	add(a, 1, twice, 3, 100);               /* a.py twice in a stack: counted once */
	add(a, 2, twice, 3, 7);                 /* the same path under another root: another file */
	add(a, 3, twice, 1, 5);                 /* a process whose root was never opened */
	add(a, 4, twice, 1, 4);                 /* one past the table of roots */
	add(a, 1, huge, 1, 90);
	add(a, 1, gone, 1, 80);
	for (uint32_t i = 0; i < 5; i++)
		add(a, 1, &m[i], 1, 60 - i);    /* m1 hottest: m1-m4 fit the budget, m5 does not */
	CHECK_EQ_INT(sources_collect(a, &rd, &s), 0);
	CHECK_EQ_INT(s.n, 13);
	CHECK_EQ_STR(s.f[0].path, "a.py");
	CHECK_EQ_INT(s.f[0].samples, 100);
	CHECK(s.f[0].text && s.f[0].len == 8);
	CHECK_EQ_INT(find(&s, 1, "a.py")->samples, 7);
	CHECK(find(&s, 1, "a.py")->text != NULL);
	CHECK_EQ_STR(find(&s, SRC_NO_ROOT, "a.py")->why, "the process had exited before its files could be opened");
	CHECK_EQ_STR(find(&s, SRC_ROOTS_FULL, "a.py")->why, "too many processes' roots were held already");
	CHECK_EQ_STR(find(&s, 0, "huge.py")->why, "left out: 600 KiB, over the 512 KiB a file may take");
	CHECK_EQ_STR(find(&s, 0, "gone.py")->why, "No such file or directory");
	CHECK(find(&s, 0, "m4.py")->text != NULL);
	CHECK(find(&s, 0, "m5.py")->text == NULL);
	CHECK(strstr(find(&s, 0, "m5.py")->why, "more than the ") != NULL);
	CHECK(s.embedded <= SRC_BUDGET);
	CHECK_EQ_INT(s.npids, 4);
	sources_free(&s);
	agg_free(a);
}

/* The real reader, under our own root and cwd. */
static void test_reader(void)
{
	char dir[] = "/tmp/pbp-src-XXXXXX", path[64], *text = NULL, why[160];
	struct srcroots r;
	size_t len = 0, size = 0;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	srcroots_init(&r);
	CHECK_EQ_INT(srcroots_add(&r, getpid()), 0);
	CHECK_EQ_INT(srcroots_add(&r, getpid()), 0);     /* once a pid */
	CHECK_EQ_INT(r.n, 1);
	CHECK_EQ_INT(srcroots_of(&r, (uint32_t)getpid()), 0);
	CHECK_EQ_INT(srcroots_of(&r, 1u << 30), SRCROOT_NONE);
	snprintf(path, sizeof(path), "%s/ok.py", dir);
	f = fopen(path, "w");
	fputs("def f():\n    pass\n", f);
	fclose(f);
	CHECK_EQ_INT(srcroots_read(&r, 0, path, 100, &text, &len, &size, why, sizeof(why)), 0);
	CHECK_EQ_STR(text, "def f():\n    pass\n");
	CHECK_EQ_INT(len, 18);
	free(text);
	CHECK_EQ_INT(srcroots_read(&r, 0, path, 10, &text, &len, &size, why, sizeof(why)), -PBP_E_LIMIT);
	CHECK(text == NULL && size == 18);
	snprintf(path, sizeof(path), "%s/none.py", dir);
	CHECK_EQ_INT(srcroots_read(&r, 0, path, 100, &text, &len, &size, why, sizeof(why)), -PBP_E_NOENT);
	CHECK_EQ_STR(why, "No such file or directory");
	CHECK_EQ_INT(srcroots_read(&r, 0, "/no/such/notes.txt", 1 << 20, &text, &len, &size, why, sizeof(why)),
		     -PBP_E_INVAL);
	CHECK_EQ_STR(why, "not a .py file");
	CHECK_EQ_INT(srcroots_read(&r, 0, "/etc/passwd", 1 << 20, &text, &len, &size, why, sizeof(why)),
		     -PBP_E_INVAL);     /* no extension, and no #! line naming python */
	CHECK_EQ_STR(why, "not a .py file, nor a script whose #! line names python");
	CHECK(text == NULL);
	snprintf(path, sizeof(path), "%s/tool", dir);
	f = fopen(path, "w");
	fputs("#!/usr/bin/python3\nimport sys\n", f);
	fclose(f);
	CHECK_EQ_INT(srcroots_read(&r, 0, path, 100, &text, &len, &size, why, sizeof(why)), 0);
	free(text);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nul.py", dir);
	f = fopen(path, "w");
	fwrite("a\0b", 1, 3, f);
	fclose(f);
	CHECK_EQ_INT(srcroots_read(&r, 0, path, 100, &text, &len, &size, why, sizeof(why)), -PBP_E_INVAL);
	CHECK_EQ_STR(why, "it holds NUL bytes: not source text");
	unlink(path);
	CHECK_EQ_INT(srcroots_read(&r, 5, "a.py", 100, &text, &len, &size, why, sizeof(why)), -PBP_E_GONE);
	snprintf(path, sizeof(path), "%s/ok.py", dir);
	unlink(path);
	rmdir(dir);
	srcroots_close(&r);
}

int main(void)
{
	test_ranked_within_budget();
	test_reader();
	return unit_done("test_sources");
}
