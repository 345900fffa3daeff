/* SPDX-License-Identifier: MIT */
/*
 * A whole small file read into memory, for the files the program reads
 * at once (a token, a certificate, a container's bundle, a source file).
 */
#ifndef PBP_CORE_FILE_H
#define PBP_CORE_FILE_H

#include <stddef.h>

/*
 * All of fd, a regular file of at most max bytes, into *out (malloc'd,
 * NUL-terminated past *len bytes). Anything but a regular file is refused
 * before a byte is read, so a FIFO or a device never makes the caller wait.
 * 0; -PBP_E_INVAL: not a regular file; -PBP_E_LIMIT: more than max bytes
 * (a file that grew past max while read too); -PBP_E_NOMEM; -PBP_E_IO:
 * fstat or read failed, errno says why. *out is NULL on failure.
 */
int file_read_fd(int fd, size_t max, char **out, size_t *len);

/*
 * The same for path, opened here (O_NONBLOCK: opening a FIFO does not wait
 * for a writer). -PBP_E_IO also when it cannot be opened (errno: ENOENT
 * for a missing file).
 */
int file_read(const char *path, size_t max, char **out, size_t *len);

#endif /* PBP_CORE_FILE_H */
