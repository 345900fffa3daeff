/* SPDX-License-Identifier: MIT */
/*
 * elf.c against real files (every pyenv libpython, Debian's python3.11, this
 * program) and the small ELF seeds of tests/fuzz/corpus/elf/.
 *
 * Real files are checked against facts obtained independently at run time:
 * `nm` for symbol values, the live interpreter for its version and
 * hexversion, program headers read here for segment permissions, the
 * 4 bytes of Py_Version read from the file at the offset its segment gives.
 * Files that are absent are skipped with a SKIP line.
 *
 * Careful: this file must not contain a string literal that looks like a
 * CPython version, as the /proc/self/exe check expects none in .rodata.
 */
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/elf.h"
#include "proc/elfcache.h"
#include "core/errors.h"
#include "unit.h"

#define SEEDS "../fuzz/corpus/elf/"

static int write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* ------------------------------------------------ independent ELF facts */

struct facts {
	int e_type;
	uint64_t load0;         /* p_vaddr of the offset-0 PT_LOAD */
	bool have_load0;
	uint64_t pyrt_addr;     /* .PyRuntime sh_addr, 0 if none */
	bool have_symtab;
};

static int elf_facts(const char *path, struct facts *fa)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	GElf_Ehdr eh;
	size_t n, i, shstr;
	Elf_Scn *scn = NULL;

	memset(fa, 0, sizeof(*fa));
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n) || elf_getshdrstrndx(elf, &shstr)) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -1;
	}
	fa->e_type = eh.e_type;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0 &&
		    !fa->have_load0) {
			fa->have_load0 = true;
			fa->load0 = ph.p_vaddr;
		}
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstr, sh.sh_name);
		if (name && strcmp(name, ".PyRuntime") == 0)
			fa->pyrt_addr = sh.sh_addr;
		if (sh.sh_type == SHT_SYMTAB)
			fa->have_symtab = true;
	}
	elf_end(elf);
	close(fd);
	return 0;
}

/* The PT_LOAD holding vaddr: its flags, and the file offset if it has file bytes there. */
static int segment_of(const char *path, uint64_t vaddr, uint32_t *flags, int64_t *file_off)
{
	int fd = open(path, O_RDONLY), ret = -1;
	Elf *elf;
	size_t n, i;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &n) == 0) {
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_memsz)
				continue;
			*flags = ph.p_flags;
			*file_off = vaddr - ph.p_vaddr + 4 <= ph.p_filesz ?
				(int64_t)(ph.p_offset + (vaddr - ph.p_vaddr)) : -1;
			ret = 0;
			break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* A symbol's value from nm: 0 found, -1 not listed, -2 nm not usable. */
static int nm_lookup(const char *path, bool dynamic, const char *name, uint64_t *value)
{
	char cmd[600], line[512];
	FILE *p;
	int ret = -1, lines = 0;

	snprintf(cmd, sizeof(cmd), "nm %s--defined-only '%s' 2>/dev/null", dynamic ? "-D " : "", path);
	p = popen(cmd, "r");
	if (!p)
		return -2;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long v;
		char type, sym[256];

		lines++;
		if (sscanf(line, "%llx %c %255s", &v, &type, sym) == 3 && strcmp(sym, name) == 0) {
			*value = v;
			ret = 0;
		}
	}
	if (pclose(p) != 0 || lines == 0)
		return -2;
	return ret;
}

/* PY_VERSION and sys.hexversion from the live interpreter; 0 or -1. */
static int live_version(const char *python, char *ver, size_t verlen, uint32_t *hex)
{
	char cmd[600], line[128];
	unsigned long h;
	FILE *p;
	int ok = 0;

	if (access(python, X_OK) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "'%s' -S -c 'import sys; print(sys.version.split()[0], sys.hexversion)' 2>/dev/null",
		 python);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fgets(line, sizeof(line), p)) {
		char v[64];

		if (sscanf(line, "%63s %lu", v, &h) == 2 && strlen(v) < verlen) {
			strcpy(ver, v);
			*hex = (uint32_t)h;
			ok = 1;
		}
	}
	if (pclose(p) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* Little-endian u32 at a file offset. */
static int pread_u32(const char *path, int64_t off, uint32_t *out)
{
	int fd = open(path, O_RDONLY);
	uint8_t b[4];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, b, 4, off);
	close(fd);
	if (n != 4)
		return -1;
	*out = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

/* Turn a 64-bit little-endian image's DT_SONAME into DT_DEBUG; true if there was one. */
static bool hide_soname(uint8_t *buf, size_t len)
{
	uint64_t shoff;
	uint16_t shentsize, shnum;
	size_t i, j;
	bool done = false;

	if (len < 64 || buf[4] != ELFCLASS64 || buf[5] != ELFDATA2LSB)
		return false;
	memcpy(&shoff, buf + 0x28, 8);
	memcpy(&shentsize, buf + 0x3a, 2);
	memcpy(&shnum, buf + 0x3c, 2);
	if (shentsize != 64 || shoff >= len || len - shoff < (uint64_t)shnum * 64)
		return false;
	for (i = 0; i < shnum; i++) {
		const uint8_t *sh = buf + shoff + i * 64;
		uint32_t type;
		uint64_t off, size;

		memcpy(&type, sh + 4, 4);
		memcpy(&off, sh + 0x18, 8);
		memcpy(&size, sh + 0x20, 8);
		if (type != SHT_DYNAMIC || off >= len || len - off < size)
			continue;
		for (j = 0; j + 16 <= size; j += 16) {
			int64_t tag;

			memcpy(&tag, buf + off + j, 8);
			if (tag == DT_SONAME) {
				tag = DT_DEBUG;
				memcpy(buf + off + j, &tag, 8);
				done = true;
			}
		}
	}
	return done;
}

/* ------------------------------------------------------- real binaries */

/*
 * Every check that holds for a CPython >= 3.7 binary with _PyRuntime.
 * ver/hex: what the live interpreter reports.
 */
static void check_real(const char *path, const char *ver, uint32_t hex)
{
	struct elf_info ei;
	struct facts fa;
	unsigned major = 0, minor = 0;
	char mm[16], vs[64];
	uint64_t nmv;
	uint32_t flags = 0, word = 0;
	int64_t off = -1;
	int r, nmr;
	bool expect_found;

	CHECK(sscanf(ver, "%u.%u", &major, &minor) == 2);
	snprintf(mm, sizeof(mm), "%u.%u", major, minor);
	/* 3.6 has no _PyRuntime: its interp_head (a local symbol) stands for it */
	expect_found = major == 3 && minor >= 6;
	CHECK_EQ_INT(elf_facts(path, &fa), 0);

	r = elf_find_python(path, &ei);
	printf("  %s: ret %d runtime %#llx%s size %#llx Py_Version %#llx=%#x PyCode_Type %#llx "
	       "shared %d load0 %#llx soname_version %s\n", path, r,
	       (unsigned long long)ei.runtime_vaddr, ei.runtime_from_section ? " (section)" : "",
	       (unsigned long long)ei.runtime_size, (unsigned long long)ei.version_vaddr,
	       ei.version_hex, (unsigned long long)ei.pycode_type_vaddr, ei.is_shared,
	       (unsigned long long)ei.first_load_vaddr, ei.soname_version);
	CHECK_EQ_INT(r, expect_found ? 0 : -PBP_E_NOTPY);
	CHECK_EQ_INT(ei.runtime_is_interp_head, major == 3 && minor == 6);
	for (int i = 0; i < ELF_GIL_STATICS; i++) {
		/* 3.6's GIL statics: gil_locked in .data, the rest after it in .bss */
		CHECK_EQ_INT(ei.gil_statics[i] != 0, major == 3 && minor == 6);
		CHECK(ei.gil_statics[i] >= ei.gil_statics[ELF_GIL_LOCKED]);
	}
	CHECK_EQ_STR(ei.soname_version, mm);
	CHECK_EQ_INT(ei.is_shared, fa.e_type == ET_DYN);
	CHECK(fa.have_load0);
	CHECK_EQ_INT(ei.first_load_vaddr, fa.load0);

	/* the version string fallback: exact, on every version */
	r = elf_find_version_string(path, vs, sizeof(vs));
	printf("  %s: version string ret %d \"%s\" (live interpreter: %s, %#x)\n", path, r,
	       r ? "" : vs, ver, hex);
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_STR(vs, ver);
	CHECK_EQ_INT(elf_find_version_string(path, vs, strlen(ver)), -PBP_E_INVAL);  /* no room for the NUL */
	CHECK_EQ_INT(elf_find_version_string(path, vs, strlen(ver) + 1), 0);

	/* the in-memory API finds the same; it knows major.minor only from DT_SONAME */
	{
		size_t len;
		void *buf = unit_load_file(path, &len);
		struct elf_info em;

		CHECK(buf != NULL);
		if (buf) {
			CHECK_EQ_INT(elf_find_python_mem(buf, len, &em), expect_found ? 0 : -PBP_E_NOTPY);
			CHECK_EQ_INT(em.runtime_vaddr, ei.runtime_vaddr);
			CHECK_EQ_INT(em.version_hex, ei.version_hex);
			CHECK_EQ_INT(em.pycode_type_vaddr, ei.pycode_type_vaddr);
			CHECK_EQ_INT(em.first_load_vaddr, ei.first_load_vaddr);
			/* no name: DT_SONAME, Py_Version or getpath's landmark must do */
			CHECK(em.soname_version[0] == '\0' || strcmp(em.soname_version, mm) == 0);
			CHECK_EQ_INT(elf_find_version_string_mem(buf, len, vs, sizeof(vs)), 0);
			CHECK_EQ_STR(vs, ver);
			/* and with DT_SONAME hidden too (a static interpreter, a map_files path) */
			if (hide_soname(buf, len)) {
				CHECK_EQ_INT(elf_find_python_mem(buf, len, &em), expect_found ? 0 : -PBP_E_NOTPY);
				CHECK_EQ_STR(em.soname_version, "");
				CHECK_EQ_INT(em.runtime_vaddr, ei.runtime_vaddr);
				CHECK_EQ_INT(elf_find_version_string_mem(buf, len, vs, sizeof(vs)), 0);
				CHECK_EQ_STR(vs, ver);
			}
			free(buf);
		}
	}

	if (!expect_found)
		return;

	/* _PyRuntime (3.6: interp_head): what nm says, in a writable segment */
	CHECK(!ei.runtime_from_section);
	if (minor == 6) {
		nmr = nm_lookup(path, false, "interp_head", &nmv);
		if (nmr != -2) {
			CHECK_EQ_INT(nmr, 0);
			CHECK_EQ_INT(ei.runtime_vaddr, nmv);
			CHECK_EQ_INT(nm_lookup(path, false, "gil_locked", &nmv), 0);
			CHECK_EQ_INT(ei.gil_statics[ELF_GIL_LOCKED], nmv);
			CHECK_EQ_INT(nm_lookup(path, false, "gil_cond", &nmv), 0);
			CHECK_EQ_INT(ei.gil_statics[ELF_GIL_COND], nmv);
		}
		CHECK_EQ_INT(segment_of(path, ei.runtime_vaddr, &flags, &off), 0);
		CHECK(flags & PF_W);
		return;
	}
	nmr = nm_lookup(path, true, "_PyRuntime", &nmv);
	if (nmr == -2)
		printf("SKIP nm checks for %s: nm not usable\n", path);
	else {
		CHECK_EQ_INT(nmr, 0);
		CHECK_EQ_INT(ei.runtime_vaddr, nmv);
		CHECK_EQ_INT(nm_lookup(path, true, "PyCode_Type", &nmv), 0);
		CHECK_EQ_INT(ei.pycode_type_vaddr, nmv);
		if (fa.have_symtab) {
			CHECK_EQ_INT(nm_lookup(path, false, "_PyRuntime", &nmv), 0);
			CHECK_EQ_INT(ei.runtime_vaddr, nmv);
			/* 3.12's count of code objects made, a static: the kernel's code cache keys on it */
			CHECK(minor != 12 || (nm_lookup(path, false, "_Py_next_func_version", &nmv) == 0 &&
					      ei.code_count_vaddr == nmv && nmv));
		}
	}
	CHECK(ei.runtime_size > 0);
	CHECK_EQ_INT(segment_of(path, ei.runtime_vaddr, &flags, &off), 0);
	CHECK(flags & PF_W);
	CHECK_EQ_INT(segment_of(path, ei.pycode_type_vaddr, &flags, &off), 0);
	CHECK(flags & PF_W);
	if (fa.pyrt_addr)   /* 3.10+: _PyRuntime opens its own section */
		CHECK_EQ_INT(ei.runtime_vaddr, fa.pyrt_addr);
	CHECK(minor < 11 || fa.pyrt_addr != 0);

	if (minor < 11) {
		CHECK_EQ_INT(ei.version_vaddr, 0);
		CHECK_EQ_INT(ei.version_hex, 0);
		return;
	}
	/* Py_Version: nm's value, read-only, and the word in the file is the live hexversion */
	if (nmr != -2) {
		CHECK_EQ_INT(nm_lookup(path, true, "Py_Version", &nmv), 0);
		CHECK_EQ_INT(ei.version_vaddr, nmv);
	}
	CHECK_EQ_INT(segment_of(path, ei.version_vaddr, &flags, &off), 0);
	CHECK(!(flags & PF_W));
	CHECK(off >= 0);
	CHECK_EQ_INT(pread_u32(path, off, &word), 0);
	CHECK_EQ_INT(word, hex);
	CHECK_EQ_INT(ei.version_hex, hex);
}

/*
 * The same file with both symbol tables hidden (their sh_type set to
 * PROGBITS in a copy): only the .PyRuntime section can give _PyRuntime.
 */
static void check_stripped_copy(const char *path, uint64_t want_runtime)
{
	size_t len, i;
	uint8_t *buf = unit_load_file(path, &len);
	struct elf_info ei;
	uint64_t shoff;
	uint16_t shentsize, shnum;
	int hidden = 0;

	CHECK(buf != NULL && len > 64);
	if (!buf || len <= 64)
		goto out;
	memcpy(&shoff, buf + 0x28, 8);
	memcpy(&shentsize, buf + 0x3a, 2);
	memcpy(&shnum, buf + 0x3c, 2);
	CHECK(shentsize == 64 && shoff < len && len - shoff >= (uint64_t)shnum * 64);
	if (shentsize != 64 || shoff >= len || len - shoff < (uint64_t)shnum * 64)
		goto out;
	for (i = 0; i < shnum; i++) {
		uint8_t *type = buf + shoff + i * 64 + 4;
		uint32_t t;

		memcpy(&t, type, 4);
		if (t == SHT_SYMTAB || t == SHT_DYNSYM) {
			t = SHT_PROGBITS;
			memcpy(type, &t, 4);
			hidden++;
		}
	}
	CHECK(hidden >= 1);
	CHECK_EQ_INT(elf_find_python_mem(buf, len, &ei), 0);
	CHECK(ei.runtime_from_section);
	CHECK_EQ_INT(ei.runtime_vaddr, want_runtime);
	CHECK(ei.runtime_size > 0);
	CHECK_EQ_INT(ei.version_vaddr, 0);
	CHECK_EQ_INT(ei.pycode_type_vaddr, 0);
out:
	free(buf);
}

static void test_pyenv(void)
{
	glob_t g;
	size_t i;
	int n = 0;

	if (glob("/root/.pyenv/versions/*/lib/libpython3.*.so.1.0", 0, NULL, &g) != 0) {
		printf("SKIP test_pyenv: no /root/.pyenv/versions/*/lib/libpython3.*.so.1.0\n");
		return;
	}
	for (i = 0; i < g.gl_pathc; i++) {
		const char *lib = g.gl_pathv[i];
		char prefix[512], python[600], ver[64];
		const char *base = strrchr(lib, '/') + 1;
		unsigned major, minor;
		uint32_t hex;
		struct elf_info ei;
		char *slash;

		snprintf(prefix, sizeof(prefix), "%s", lib);
		if ((slash = strrchr(prefix, '/')))
			*slash = '\0';
		if ((slash = strrchr(prefix, '/')))
			*slash = '\0';      /* strip "/lib" */
		if (sscanf(base, "libpython%u.%u", &major, &minor) != 2) {
			printf("SKIP %s: unexpected name\n", lib);
			continue;
		}
		snprintf(python, sizeof(python), "%s/bin/python%u.%u", prefix, major, minor);
		if (live_version(python, ver, sizeof(ver), &hex) != 0) {
			printf("SKIP %s: cannot run %s for its version\n", lib, python);
			continue;
		}
		check_real(lib, ver, hex);
		if (elf_find_python(lib, &ei) == 0) {
			struct facts fa;

			if (elf_facts(lib, &fa) == 0 && fa.pyrt_addr)
				check_stripped_copy(lib, ei.runtime_vaddr);
		}
		n++;
	}
	globfree(&g);
	if (n == 0)
		printf("SKIP test_pyenv: no usable pyenv interpreter\n");
}

/* Debian's python3.11: ET_EXEC, no .symtab, .dynsym and .PyRuntime. */
static void test_debian(void)
{
	const char *path = "/usr/bin/python3.11";
	char ver[64];
	uint32_t hex;
	struct facts fa;

	if (access(path, R_OK) != 0) {
		printf("SKIP test_debian: no %s\n", path);
		return;
	}
	if (live_version(path, ver, sizeof(ver), &hex) != 0) {
		printf("SKIP test_debian: cannot run %s\n", path);
		return;
	}
	CHECK_EQ_INT(elf_facts(path, &fa), 0);
	if (fa.have_symtab)
		printf("NOTE %s has a .symtab (not stripped)\n", path);
	check_real(path, ver, hex);
	check_stripped_copy(path, fa.pyrt_addr);
}

static void test_self(void)
{
	struct elf_info ei;
	char vs[64];

	CHECK_EQ_INT(elf_find_python("/proc/self/exe", &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(ei.runtime_vaddr, 0);
	CHECK_EQ_INT(ei.version_vaddr, 0);
	CHECK_EQ_INT(ei.pycode_type_vaddr, 0);
	CHECK_EQ_STR(ei.soname_version, "");
	CHECK_EQ_INT(elf_find_version_string("/proc/self/exe", vs, sizeof(vs)), -PBP_E_NOTPY);

	CHECK_EQ_INT(elf_find_python("/nonexistent/libpython3.9.so.1.0", &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_python("/etc/hostname", &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_python(NULL, &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_python("/proc/self/exe", NULL), -PBP_E_INVAL);
	CHECK_EQ_INT(elf_find_version_string("/nonexistent", vs, sizeof(vs)), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_version_string("/proc/self/exe", NULL, 0), -PBP_E_INVAL);
	CHECK_EQ_INT(elf_find_python_mem(NULL, 0, &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_python_mem("", 0, &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_python_mem("\177ELF", 4, &ei), -PBP_E_NOTPY);
	CHECK_EQ_INT(elf_find_version_string_mem("\177ELF", 4, vs, sizeof(vs)), -PBP_E_NOTPY);
}

/* ------------------------------------------------------------- seeds */

struct seed_expect {
	const char *name;
	int ret;
	uint64_t runtime;
	bool from_section;
	uint32_t version_hex;
	bool has_codetype;
	bool shared;
	const char *soname_version;
	const char *version_string;     /* NULL: -1 expected */
};

/*
 * The seeds are built from the sources quoted in tests/fuzz/fuzz_elf.c;
 * expected values are what those sources put there (addresses come from
 * the linker, so they are checked for consistency with the segments).
 * Version strings are assembled at run time so no literal sits in .rodata.
 */
static void test_seeds(void)
{
	char v312[16], v397[16], v311rc[16], v310p[16], v3916[16];
	const struct seed_expect seeds[] = {
		{ "lib312_pyruntime_section.so", 0, 0, false, 0x030c04f0, true, true, "3.12", v312 },
		{ "lib39_bss_decoys.so", 0, 0, false, 0, true, true, "3.9", v397 },
		{ "lib311_stripped.so", 0, 0, true, 0, false, true, "3.11", v311rc },
		{ "exec_static", 0, 0, false, 0x030a0ef0, false, false, "", v310p },
		{ "exec39_landmark", 0, 0, false, 0, false, false, "", v3916 },
		{ "nopython.so", -PBP_E_NOTPY, 0, false, 0, false, true, "", NULL },
	};
	size_t i;

	snprintf(v312, sizeof(v312), "%d.%d.%d", 3, 12, 4);
	snprintf(v397, sizeof(v397), "%d.%d.%d", 3, 9, 7);
	snprintf(v311rc, sizeof(v311rc), "%d.%d.%drc%d", 3, 11, 9, 1);
	snprintf(v310p, sizeof(v310p), "%d.%d.%d+", 3, 10, 14);
	snprintf(v3916, sizeof(v3916), "%d.%d.%d", 3, 9, 16);

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		const struct seed_expect *s = &seeds[i];
		char path[256], vs[64];
		struct elf_info ei, ef;
		size_t len;
		uint8_t *buf;
		struct facts fa;
		uint32_t flags = 0;
		int64_t off = -1;
		int r;

		snprintf(path, sizeof(path), SEEDS "%s", s->name);
		buf = unit_load_file(path, &len);
		if (!buf) {
			printf("SKIP seed %s: not found\n", path);
			continue;
		}
		r = elf_find_python_mem(buf, len, &ei);
		CHECK_EQ_INT(r, s->ret);
		CHECK_EQ_INT(ei.runtime_from_section, s->from_section);
		CHECK_EQ_INT(ei.version_hex, s->version_hex);
		CHECK_EQ_INT(ei.pycode_type_vaddr != 0, s->has_codetype);
		CHECK_EQ_INT(ei.is_shared, s->shared);
		CHECK_EQ_STR(ei.soname_version, s->soname_version);
		CHECK_EQ_INT(elf_facts(path, &fa), 0);
		CHECK_EQ_INT(ei.first_load_vaddr, fa.load0);
		if (r == 0) {
			CHECK_EQ_INT(segment_of(path, ei.runtime_vaddr, &flags, &off), 0);
			CHECK(flags & PF_W);
			if (fa.pyrt_addr)
				CHECK_EQ_INT(ei.runtime_vaddr, fa.pyrt_addr);
		}
		/* the file API agrees (the seed's name says nothing about python) */
		CHECK_EQ_INT(elf_find_python(path, &ef), r);
		CHECK(ei.runtime_vaddr == ef.runtime_vaddr && ei.runtime_size == ef.runtime_size &&
		      ei.version_vaddr == ef.version_vaddr && ei.version_hex == ef.version_hex &&
		      ei.pycode_type_vaddr == ef.pycode_type_vaddr && ei.is_shared == ef.is_shared &&
		      ei.first_load_vaddr == ef.first_load_vaddr &&
		      strcmp(ei.soname_version, ef.soname_version) == 0);

		r = elf_find_version_string_mem(buf, len, vs, sizeof(vs));
		if (s->version_string) {
			CHECK_EQ_INT(r, 0);
			CHECK_EQ_STR(vs, s->version_string);
		} else {
			CHECK_EQ_INT(r, -PBP_E_NOTPY);
		}
		CHECK_EQ_INT(elf_find_version_string(path, vs, sizeof(vs)), r);
		free(buf);
	}
}

/* Names decide soname_version (and with it which version strings count). */
static void test_names(void)
{
	static const struct { const char *file, *want; } names[] = {
		{ "libpython3.9.so.1.0", "3.9" },
		{ "libpython3.11.so", "3.11" },
		{ "libpython3.7m.so.1.0", "3.7" },
		{ "libpython3.11d.so.1.0", "3.11" },
		{ "python3.11", "3.11" },
		{ "python3.8d", "3.8" },
		{ "python3.13t", "3.13" },
		{ "python3", "" },
		{ "python", "" },
		{ "python3.", "" },
		{ "python3.x", "" },
		{ "python3.11-config", "" },
		{ "pythonista3.1", "" },
		{ "mypython3.9", "" },
		{ "libfoo.so", "" },
	};
	char dir[] = "/tmp/test_elf.XXXXXX", path[512], vs[64];
	size_t len, i;
	uint8_t *buf = unit_load_file(SEEDS "nopython.so", &len);
	struct elf_info ei;

	if (!buf) {
		printf("SKIP test_names: no seed nopython.so\n");
		return;
	}
	if (!mkdtemp(dir)) {
		printf("SKIP test_names: mkdtemp failed\n");
		free(buf);
		return;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i].file);
		CHECK_EQ_INT(write_file(path, buf, len), 0);
		CHECK_EQ_INT(elf_find_python(path, &ei), -PBP_E_NOTPY);
		if (strcmp(ei.soname_version, names[i].want) != 0)
			fprintf(stderr, "name %s\n", names[i].file);
		CHECK_EQ_STR(ei.soname_version, names[i].want);
		/*
		 * nopython.so holds two standalone candidates of different minors:
		 * ambiguous without a name, one of them once the name says which.
		 */
		if (strcmp(names[i].want, "3.8") == 0 || strcmp(names[i].want, "3.9") == 0) {
			CHECK_EQ_INT(elf_find_version_string(path, vs, sizeof(vs)), 0);
			CHECK(strncmp(vs, names[i].want, 3) == 0 && vs[3] == '.');
		} else {
			CHECK_EQ_INT(elf_find_version_string(path, vs, sizeof(vs)), -PBP_E_NOTPY);
		}
		unlink(path);
	}
	rmdir(dir);
	free(buf);
}

/* Cut and damaged seeds: never a crash, and results stay self-consistent. */
static void test_corrupt(void)
{
	static const char *const names[] = { "lib312_pyruntime_section.so", "lib39_bss_decoys.so",
					     "lib311_stripped.so", "exec_static", "exec39_landmark" };
	uint32_t rng = 12345;
	size_t k;
	int bad = 0;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		char path[256], vs[64];
		size_t len, cut, j;
		uint8_t *buf, *work;
		struct elf_info ei;
		int iter;

		snprintf(path, sizeof(path), SEEDS "%s", names[k]);
		buf = unit_load_file(path, &len);
		if (!buf) {
			printf("SKIP corrupt %s: not found\n", path);
			continue;
		}
		work = malloc(len);
		for (cut = 0; cut < len; cut += (cut < 256 ? 1 : 7)) {
			int r = elf_find_python_mem(buf, cut, &ei);

			bad += r != 0 && r != -PBP_E_NOTPY;
			bad += (r == 0) != (ei.runtime_vaddr != 0);
			if (elf_find_version_string_mem(buf, cut, vs, sizeof(vs)) == 0)
				bad += vs[0] != '3' || vs[1] != '.';
		}
		for (iter = 0; work && iter < 3000; iter++) {
			int flips = 1 + (int)(rng % 8), r;

			memcpy(work, buf, len);
			for (j = 0; j < (size_t)flips; j++) {
				rng = rng * 1103515245u + 12345u;
				work[(rng >> 8) % len] ^= (uint8_t)(1u << ((rng >> 4) & 7));
			}
			r = elf_find_python_mem(work, len, &ei);
			bad += (r == 0) != (ei.runtime_vaddr != 0);
			if (elf_find_version_string_mem(work, len, vs, sizeof(vs)) == 0)
				bad += vs[0] != '3' || vs[1] != '.' || strlen(vs) >= 32;
		}
		CHECK(work != NULL);
		CHECK_EQ_INT(bad, 0);
		free(work);
		free(buf);
	}
}

/* The cache answers as the file does, reads a file once, and again when it changed. */
static void test_cache(void)
{
	char dir[] = "/tmp/test_elfcache.XXXXXX", lib[512], named[512], vs[64], vs2[64];
	size_t len, len2;
	uint8_t *py = unit_load_file(SEEDS "lib312_pyruntime_section.so", &len);
	uint8_t *nopy = unit_load_file(SEEDS "nopython.so", &len2);
	struct timespec later[2] = { { 1000000, 0 }, { 1000000, 0 } };
	struct elf_info want, got;
	struct stat st;
	uint8_t *zeros = NULL;

	if (!py || !nopy || !mkdtemp(dir)) {
		printf("SKIP test_cache: no seeds or no temporary directory\n");
		goto out;
	}
	snprintf(lib, sizeof(lib), "%s/libpython3.12.so.1.0", dir);
	snprintf(named, sizeof(named), "%s/libpython3.9.so.1.0", dir);
	CHECK_EQ_INT(write_file(lib, py, len), 0);
	CHECK_EQ_INT(write_file(named, nopy, len2), 0);
	CHECK_EQ_INT(elf_find_python(lib, &want), 0);
	memset(&got, 0xff, sizeof(got));
	CHECK_EQ_INT(elfcache_find_python(lib, NULL, &got), 0);
	CHECK(memcmp(&got, &want, sizeof(got)) == 0);
	/*
	 * Its bytes changed behind the cache's back, its identity (device,
	 * inode, size, mtime) kept: only an answer from the cache is still
	 * the old one, a read would find no Python in zeros.
	 */
	CHECK_EQ_INT(stat(lib, &st), 0);
	zeros = calloc(1, len);
	CHECK(zeros != NULL);
	CHECK_EQ_INT(zeros ? write_file(lib, zeros, len) : -1, 0);
	CHECK_EQ_INT(utimensat(AT_FDCWD, lib, (struct timespec[2]){ st.st_atim, st.st_mtim }, 0), 0);
	CHECK_EQ_INT(elf_find_python(lib, &got), -PBP_E_NOTPY);
	memset(&got, 0xff, sizeof(got));
	CHECK_EQ_INT(elfcache_find_python(lib, NULL, &got), 0);
	CHECK(memcmp(&got, &want, sizeof(got)) == 0);

	/* a version string, and a buffer too small for it, as elf.c answers them */
	CHECK_EQ_INT(elf_find_version_string(named, vs, sizeof(vs)), 0);
	CHECK_EQ_INT(elfcache_version_string(named, vs2, sizeof(vs2)), 0);
	CHECK_EQ_STR(vs2, vs);
	CHECK_EQ_INT(elfcache_version_string(named, vs2, strlen(vs)), -PBP_E_INVAL);
	CHECK_EQ_INT(elfcache_version_string(named, vs2, strlen(vs) + 1), 0);
	CHECK_EQ_INT(elfcache_find_python(named, NULL, &got), -PBP_E_NOTPY);
	CHECK_EQ_INT(elfcache_find_python(named, NULL, &got), -PBP_E_NOTPY);      /* a failure is kept too */

	/* the file replaced in place: another identity, read again (the cache said yes) */
	CHECK_EQ_INT(write_file(lib, nopy, len2), 0);
	CHECK_EQ_INT(utimensat(AT_FDCWD, lib, later, 0), 0);
	CHECK_EQ_INT(elfcache_find_python(lib, NULL, &got), -PBP_E_NOTPY);
	CHECK_EQ_INT(elfcache_find_python("/nonexistent/libpython3.12.so", NULL, &got), -PBP_E_NOTPY);
	unlink(lib);
	unlink(named);
	rmdir(dir);
out:
	free(zeros);
	free(py);
	free(nopy);
}

int main(void)
{
	test_self();
	test_seeds();
	test_names();
	test_cache();
	test_corrupt();
	test_pyenv();
	test_debian();
	return unit_done("elf");
}
