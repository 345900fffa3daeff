/* SPDX-License-Identifier: MIT */
/*
 * elf.c's answers, kept per file: every process of one interpreter maps the
 * same file, and a host (-a, the agent) starts hundreds of them. A file is
 * known by its device, inode, size and modification time, so one replaced
 * in place is looked at again. Not thread-safe: the sampling loop's only.
 */
#ifndef PBP_PROC_ELFCACHE_H
#define PBP_PROC_ELFCACHE_H

#include <stddef.h>
#include <sys/stat.h>

#include "proc/elf.h"

/*
 * As elf_find_python and elf_find_version_string, from the cache when the
 * file is known. st: what stat(path) just gave, or NULL to ask it here.
 */
int elfcache_find_python(const char *path, const struct stat *st, struct elf_info *out);
int elfcache_version_string(const char *path, char *out, size_t outlen);

#endif /* PBP_PROC_ELFCACHE_H */
