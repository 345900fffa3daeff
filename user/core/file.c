/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/file.h"

/* The first buffer: the size fstat gave, and room to see the file grew. */
#define SLACK 64

/*
 * Read fd to its end, the buffer grown up to max + 2 bytes: reading
 * max + 1 is how a file that grew past max is seen.
 */
static int read_to_end(int fd, size_t size, size_t max, char **out, size_t *len)
{
	size_t cap = (size < max ? size : max) + SLACK, n = 0;
	char *buf = malloc(cap), *grown;
	int err = buf ? 0 : -PBP_E_NOMEM;
	ssize_t got;

	while (!err) {
		if (n > max) {
			err = -PBP_E_LIMIT;
			break;
		}
		if (n + 1 == cap) {     /* full but for the NUL */
			size_t want = cap > max / 2 ? max + 2 : cap * 2;

			grown = realloc(buf, want);
			if (!grown) {
				err = -PBP_E_NOMEM;
				break;
			}
			buf = grown;
			cap = want;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got == 0)
			break;
		if (got < 0 && errno != EINTR)
			err = -PBP_E_IO;
		else if (got > 0)
			n += (size_t)got;
	}
	if (err) {
		int saved = errno;

		free(buf);
		errno = saved;
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int file_read_fd(int fd, size_t max, char **out, size_t *len)
{
	struct stat st;

	*out = NULL;
	*len = 0;
	if (fstat(fd, &st) != 0)
		return -PBP_E_IO;
	if (!S_ISREG(st.st_mode))
		return -PBP_E_INVAL;
	if ((uint64_t)st.st_size > max)
		return -PBP_E_LIMIT;
	return read_to_end(fd, (size_t)st.st_size, max, out, len);
}

int file_read(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int err, saved;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -PBP_E_IO;
	err = file_read_fd(fd, max, out, len);
	saved = errno;
	close(fd);
	errno = saved;
	return err;
}
