/* SPDX-License-Identifier: MIT */
/*
 * The listen token (agent/secret.c): the file's first line, "Bearer " and
 * exactly it accepted, read again when the file is replaced (at most once
 * a second), the old one kept while the new one does not read; an empty
 * or missing file refused at the start, a FIFO refused without waiting for
 * a writer, and a TLS pair that is not PEM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/secret.h"
#include "core/errors.h"
#include "unit.h"

static void put(const char *path, const char *text)
{
	char tmp[256];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
	rename(tmp, path);      /* a new inode, as a Secret's swapped link gives */
}

static void past_recheck(void)
{
	nanosleep(&(struct timespec){ 1, 100000000 }, NULL);
}

int main(void)
{
	char dir[] = "/tmp/pbp-secret-XXXXXX", path[256], empty[256], fifo[256];
	struct token *t;
	struct tls_pair *p;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/token", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	put(empty, " \n");
	CHECK_EQ_INT(token_open(empty, &t), -PBP_E_INVAL);
	CHECK(t == NULL);
	CHECK_EQ_INT(token_open(path, &t), -PBP_E_IO);
	CHECK_EQ_INT(errno, ENOENT);
	CHECK_EQ_INT(tls_pair_open(empty, empty, &p), -PBP_E_INVAL);
	CHECK(p == NULL);
	/* a FIFO with no writer: refused at once (the alarm ends a test that waits) */
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	alarm(10);
	CHECK_EQ_INT(token_open(fifo, &t), -PBP_E_IO);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK_EQ_INT(tls_pair_open(fifo, empty, &p), -PBP_E_IO);
	alarm(0);
	unlink(fifo);

	put(path, "s3cret\t\nsecond line\n");
	CHECK_EQ_INT(token_open(path, &t), 0);
	CHECK(token_accepts(t, "Bearer s3cret"));
	CHECK(token_accepts(t, "bearer s3cret"));       /* the scheme's name has no case */
	CHECK(!token_accepts(t, NULL));
	CHECK(!token_accepts(t, "Bearer s3cre"));
	CHECK(!token_accepts(t, "Bearer s3cret "));
	CHECK(!token_accepts(t, "Bearer S3cret"));
	CHECK(!token_accepts(t, "s3cret"));
	CHECK(!token_accepts(t, "Basic s3cret"));
	CHECK(!token_accepts(t, "Bearer second line"));

	put(path, "rotated\n");
	past_recheck();
	CHECK(token_accepts(t, "Bearer rotated"));
	CHECK(!token_accepts(t, "Bearer s3cret"));
	unlink(path);                   /* mid-rotation: the old one holds */
	past_recheck();
	CHECK(token_accepts(t, "Bearer rotated"));
	put(path, "\n");
	past_recheck();
	CHECK(token_accepts(t, "Bearer rotated"));
	/* blanks around it are not the token's: a scraper sends it trimmed */
	put(path, " \t padded \n");
	past_recheck();
	CHECK(token_accepts(t, "Bearer padded"));
	CHECK(!token_accepts(t, "Bearer  \t padded"));
	token_free(t);
	unlink(path);
	unlink(empty);
	rmdir(dir);
	return unit_done("test_secret");
}
