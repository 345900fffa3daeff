/* SPDX-License-Identifier: MIT */
/*
 * elf.c's answers, kept per file: every process of one interpreter maps the
 * same file, and a host (-a, the agent) starts hundreds of them. A file is
 * known by its device, inode, size and modification time, so one replaced
 * in place is looked at again. Not thread-safe: the sampling loop's only.
 */
#ifndef PBP_PROC_ELFCACHE_H
#define PBP_PROC_ELFCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "proc/elf.h"

/*
 * As elf_find_python and elf_find_version_string, from the cache when the
 * file is known. st: what stat(path) just gave, or NULL to ask it here.
 */
int elfcache_find_python(const char *path, const struct stat *st, struct elf_info *out);
int elfcache_version_string(const char *path, char *out, size_t outlen);
/*
 * True when the file of device dev and inode ino (a maps line's) was looked
 * at and holds no Python runtime: a program exec'd again and again on a
 * host (sh, grep, a compiler) has its libraries skipped without a stat
 * each. A file of that device and inode replaced since is not told apart,
 * so only files not named python may be skipped so.
 */
bool elfcache_not_python(uint64_t dev, uint64_t ino);

#endif /* PBP_PROC_ELFCACHE_H */
