/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_UNZIP_H
#define PBP_CORE_UNZIP_H

#include <stddef.h>
#include <sys/types.h>

struct unzip;

/*
 * A file read through gzip when it is gzipped (its first two bytes are
 * gzip's magic, 1f 8b), as it is otherwise. Unlike zlib's gzread, the end
 * is checked: a gzip stream must end cleanly (its last member whole, CRC and
 * length checked) and nothing but further members may follow it, so a file
 * cut short or with bytes after its end is damaged, not a shorter file.
 *
 * unzip_open: NULL when out of memory; fd stays the caller's to close.
 */
struct unzip *unzip_open(int fd);
/*
 * Up to len bytes into buf: their count; 0 at the clean end; -PBP_E_IO
 * when reading failed (unzip_errno says why); -PBP_E_CORRUPT for damaged
 * gzip data (unzip_why says how); -PBP_E_NOMEM. A failure is returned
 * again by every later call.
 */
ssize_t unzip_read(struct unzip *u, void *buf, size_t len);
int unzip_errno(const struct unzip *u);
/* "damaged gzip data (truncated)" and the like, after -PBP_E_CORRUPT: shorter than UNZIP_WHY_MAX. */
#define UNZIP_WHY_MAX 96
const char *unzip_why(const struct unzip *u);
void unzip_close(struct unzip *u);

#endif /* PBP_CORE_UNZIP_H */
