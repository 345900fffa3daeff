// SPDX-License-Identifier: MIT
/* user/core/file.c: whole small files, and what is not one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/file.h"
#include "unit.h"

static char dir[] = "/tmp/test_file.XXXXXX";

static const char *at(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void put(const char *name, const char *bytes, size_t n)
{
	FILE *f = fopen(at(name), "wb");

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(fwrite(bytes, 1, n, f), n);
	fclose(f);
}

static void test_sizes(void)
{
	char *text = (char *)1;
	size_t len = 99;

	put("empty", "", 0);
	CHECK_EQ_INT(file_read(at("empty"), 16, &text, &len), 0);
	CHECK(text != NULL && text[0] == '\0');
	CHECK_EQ_INT(len, 0);
	free(text);

	/* exactly the bound, NUL bytes kept, NUL-terminated past them */
	put("bound", "ab\0defghijklmnop", 16);
	CHECK_EQ_INT(file_read(at("bound"), 16, &text, &len), 0);
	CHECK(text && len == 16 && !memcmp(text, "ab\0defghijklmnop", 16) && text[16] == '\0');
	free(text);

	/* one byte past it: refused, nothing handed back */
	text = (char *)1;
	CHECK_EQ_INT(file_read(at("bound"), 15, &text, &len), -PBP_E_LIMIT);
	CHECK(text == NULL);
	CHECK_EQ_INT(file_read(at("bound"), 0, &text, &len), -PBP_E_LIMIT);
}

/* Longer than the first buffer: the buffer grows, to the bound and no further. */
static void test_growth(void)
{
	enum { N = 100000 };
	char *big = malloc(N), *text = NULL;
	size_t len = 0;
	int fd;

	CHECK(big != NULL);
	if (!big)
		return;
	for (size_t i = 0; i < N; i++)
		big[i] = (char)('a' + i % 26);
	put("big", big, N);
	CHECK_EQ_INT(file_read(at("big"), N, &text, &len), 0);
	CHECK(text && len == N && !memcmp(text, big, N));
	free(text);
	CHECK_EQ_INT(file_read(at("big"), N - 1, &text, &len), -PBP_E_LIMIT);
	/* fstat sees 10 bytes; the file then grows past the bound before it is read */
	put("grows", big, 10);
	fd = open(at("grows"), O_RDWR);
	CHECK(fd >= 0);
	if (fd >= 0) {
		struct stat st;

		CHECK_EQ_INT(fstat(fd, &st), 0);
		CHECK_EQ_INT(st.st_size, 10);
		CHECK_EQ_INT(pwrite(fd, big, N, 0), N);
		CHECK_EQ_INT(lseek(fd, 0, SEEK_SET), 0);
		CHECK_EQ_INT(file_read_fd(fd, N / 2, &text, &len), -PBP_E_LIMIT);
		CHECK_EQ_INT(lseek(fd, 0, SEEK_SET), 0);
		CHECK_EQ_INT(file_read_fd(fd, N, &text, &len), 0);
		CHECK(text && len == N);
		free(text);
		close(fd);
	}
	free(big);
}

/* What is not a regular file is refused at once, a FIFO without a writer included. */
static void test_not_regular(void)
{
	char *text = (char *)1;
	size_t len = 99;
	int fd;

	CHECK_EQ_INT(mkfifo(at("fifo"), 0600), 0);
	CHECK_EQ_INT(file_read(at("fifo"), 16, &text, &len), -PBP_E_INVAL);
	CHECK(text == NULL && len == 0);
	/* opened by the caller, for reading and writing so the open does not wait */
	fd = open(at("fifo"), O_RDWR);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ_INT(file_read_fd(fd, 16, &text, &len), -PBP_E_INVAL);
		close(fd);
	}
	CHECK_EQ_INT(file_read(dir, 16, &text, &len), -PBP_E_INVAL);
	unlink(at("fifo"));
}

static void test_missing(void)
{
	char *text = (char *)1;
	size_t len = 99;

	errno = 0;
	CHECK_EQ_INT(file_read(at("missing"), 16, &text, &len), -PBP_E_IO);
	CHECK_EQ_INT(errno, ENOENT);
	CHECK(text == NULL && len == 0);
	CHECK_EQ_INT(file_read_fd(-1, 16, &text, &len), -PBP_E_IO);
	CHECK_EQ_INT(errno, EBADF);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_sizes();
	test_growth();
	test_not_regular();
	test_missing();
	unlink(at("empty"));
	unlink(at("bound"));
	unlink(at("big"));
	unlink(at("grows"));
	rmdir(dir);
	return unit_done("file");
}
