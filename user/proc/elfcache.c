/* SPDX-License-Identifier: MIT */
/*
 * A small table of ELF files and what elf.c found in them, replaced oldest
 * first. Measured with the agent's soak (20 processes of 9 interpreters
 * coming and going): parsing the interpreter's symbol tables for each new
 * process was a fifth of the agent's CPU; a file's facts never change while
 * its identity does not. Failures are kept too: in a Python process every
 * other mapped file (libc, libm, ...) is looked at once and found wanting.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "proc/elfcache.h"
#include "core/errors.h"

#define ELFCACHE_SLOTS 512     /* ~120 KiB: every library of a busy host's programs */
#define VERSION_LEN 32

struct file_id {
	uint64_t dev, ino, size, mtime_ns;
};

struct entry {
	struct file_id id;
	bool used;
	bool have_python, have_version;
	int python_rc, version_rc;
	struct elf_info info;
	char version[VERSION_LEN];
};

static struct entry slots[ELFCACHE_SLOTS];
static unsigned next_slot;

static bool file_id_of(const char *path, const struct stat *known, struct file_id *id)
{
	struct stat st;

	if (!known && stat(path, &st) != 0)
		return false;
	if (!known)
		known = &st;
	*id = (struct file_id){ (uint64_t)known->st_dev, (uint64_t)known->st_ino, (uint64_t)known->st_size,
				(uint64_t)known->st_mtim.tv_sec * 1000000000ull +
				(uint64_t)known->st_mtim.tv_nsec };
	return true;
}

/* The file's entry: the one known, else a fresh one (NULL when it cannot be told apart). */
static struct entry *entry_for(const char *path, const struct stat *st)
{
	struct file_id id;
	struct entry *e;

	if (!file_id_of(path, st, &id))
		return NULL;
	for (unsigned i = 0; i < ELFCACHE_SLOTS; i++)
		if (slots[i].used && !memcmp(&slots[i].id, &id, sizeof(id)))
			return &slots[i];
	e = &slots[next_slot++ % ELFCACHE_SLOTS];
	*e = (struct entry){ .id = id, .used = true };
	return e;
}

int elfcache_find_python(const char *path, const struct stat *st, struct elf_info *out)
{
	struct entry *e = entry_for(path, st);

	if (!e)
		return elf_find_python(path, out);
	if (e->have_python) {
		memcpy(out, &e->info, sizeof(*out));
		return e->python_rc;
	}
	e->python_rc = elf_find_python(path, &e->info);
	e->have_python = true;
	memcpy(out, &e->info, sizeof(*out));
	return e->python_rc;
}

bool elfcache_not_python(uint64_t dev, uint64_t ino)
{
	for (unsigned i = 0; i < ELFCACHE_SLOTS; i++)
		if (slots[i].used && slots[i].id.ino == ino && slots[i].id.dev == dev)
			return slots[i].have_python && slots[i].python_rc != 0;
	return false;
}

int elfcache_version_string(const char *path, char *out, size_t outlen)
{
	struct entry *e = entry_for(path, NULL);

	if (!e)
		return elf_find_version_string(path, out, outlen);
	if (!e->have_version) {
		e->version_rc = elf_find_version_string(path, e->version, sizeof(e->version));
		e->have_version = true;
	}
	/* As the file itself would answer a smaller buffer: no room for the NUL is no answer. */
	if (e->version_rc != 0)
		return e->version_rc;
	if (strlen(e->version) >= outlen)
		return -PBP_E_INVAL;
	memcpy(out, e->version, strlen(e->version) + 1);
	return 0;
}
