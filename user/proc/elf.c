/* SPDX-License-Identifier: MIT */
/*
 * Where CPython keeps its runtime in one ELF file (libpython3.X.so or a
 * statically linked python3.X), read with elfutils' libelf.
 *
 *  - _PyRuntime: a data symbol, in .symtab and (exported) in .dynsym. Since
 *    3.10 it also lives in its own section .PyRuntime, so a binary stripped
 *    of both symbol tables still gives its address. Debian's /usr/bin/python3.11
 *    is stripped of .symtab but keeps .dynsym (the interpreter exports its C
 *    API to extension modules) and .PyRuntime.
 *  - Py_Version (3.11+): a const uint32_t holding PY_VERSION_HEX, read here
 *    straight from the file.
 *  - PyCode_Type: the type object, to recognise code objects.
 *  - 3.6 has no _PyRuntime: its interpreters start at interp_head, a static
 *    of Python/pystate.c, and its GIL is a set of statics of ceval_gil.h
 *    (gil_locked, gil_last_holder, gil_mutex, gil_cond, switch_mutex,
 *    switch_cond). Local symbols are only in .symtab, so a 3.6 is found only
 *    in a file that has one (pyenv and source builds do). _PyThreadState_Current
 *    (exported by 3.6 and older, gone in 3.7) must be there too, so a local
 *    interp_head of some other library is not taken for an interpreter.
 *  - 3.12: _Py_next_func_version, the count of code objects made (a static
 *    of the library: .symtab only), which keys the kernel's code cache.
 *
 * Everything read from the file is untrusted: the same code runs on fuzzed
 * images (elf_find_python_mem). libelf bounds-checks section data against
 * the file size and symbol indexes against the data size; on top of that
 * every section index (sh_link, e_shstrndx) is checked against the section
 * count, string tables must be SHT_STRTAB, symbol tables must have the
 * symbol entry size, and elf_strptr() (which checks NUL termination inside
 * the section) is the only way a name is read.
 *
 * Files are read with ELF_C_READ (pread), not mmap: a file under
 * /proc/PID/root may be truncated while we read it, which would be SIGBUS
 * through a mapping but is only a failed read here.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "proc/elf.h"
#include "core/errors.h"

/* -------------------------------------------------------------- opening */

static Elf *open_elf_file(const char *path, int *fd)
{
	Elf *elf;

	*fd = -1;
	if (!path || elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (!elf) {
		close(*fd);
		*fd = -1;
	}
	return elf;
}

/*
 * elf_memory() wants a writable image; work on a private copy so the
 * caller's (possibly const, e.g. libFuzzer's) buffer is never touched.
 */
static Elf *open_elf_mem(const void *buf, size_t len, char **copy)
{
	Elf *elf;

	*copy = NULL;
	if (!buf || len == 0 || elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	*copy = malloc(len);
	if (!*copy)
		return NULL;
	memcpy(*copy, buf, len);
	elf = elf_memory(*copy, len);
	if (!elf) {
		free(*copy);
		*copy = NULL;
	}
	return elf;
}

static void close_elf(Elf *elf, int fd, char *copy)
{
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(copy);
}

/* ------------------------------------------------------------- sections */

struct sections {
	size_t shnum;
	size_t shstrndx;        /* 0 if unusable */
};

static int get_sections(Elf *elf, struct sections *s)
{
	s->shnum = 0;
	s->shstrndx = 0;
	if (elf_getshdrnum(elf, &s->shnum) != 0)
		return -PBP_E_NOTPY;
	if (elf_getshdrstrndx(elf, &s->shstrndx) != 0 || s->shstrndx >= s->shnum)
		s->shstrndx = 0;
	return 0;
}

static const char *section_name(Elf *elf, const struct sections *s, const GElf_Shdr *sh)
{
	if (!s->shstrndx)
		return NULL;
	return elf_strptr(elf, s->shstrndx, sh->sh_name);
}

/* The string table a symbol or dynamic section links to, or 0. */
static size_t linked_strtab(Elf *elf, const struct sections *s, const GElf_Shdr *sh)
{
	GElf_Shdr lsh;
	Elf_Scn *lscn;

	if (sh->sh_link == 0 || sh->sh_link >= s->shnum)
		return 0;
	lscn = elf_getscn(elf, sh->sh_link);
	if (!lscn || !gelf_getshdr(lscn, &lsh) || lsh.sh_type != SHT_STRTAB)
		return 0;
	return sh->sh_link;
}

/* Section data if it holds bytes from the file (not SHT_NOBITS, not empty). */
static Elf_Data *section_data(Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d;

	if (sh->sh_type == SHT_NOBITS || sh->sh_type == SHT_NULL || sh->sh_size == 0)
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size == 0)
		return NULL;
	return d;
}

/* --------------------------------------------------------- version names */

/*
 * "3.11" from a file name: [lib]python<major>.<minor>[abi flags d/m/t/u]
 * followed by the end of the name or '.' (libpython3.9.so.1.0, python3.11,
 * python3.8d, libpython3.7m.so.1.0, python3.13t). "python3" gives nothing.
 */
static void version_from_name(const char *name, char out[16])
{
	const char *p, *maj, *min;
	size_t nmaj, nmin, nflags = 0;

	out[0] = '\0';
	if (!name)
		return;
	p = strrchr(name, '/');
	p = p ? p + 1 : name;
	if (strncmp(p, "lib", 3) == 0)
		p += 3;
	if (strncmp(p, "python", 6) != 0)
		return;
	maj = p += 6;
	while (*p >= '0' && *p <= '9')
		p++;
	nmaj = (size_t)(p - maj);
	if (*p++ != '.')
		return;
	min = p;
	while (*p >= '0' && *p <= '9')
		p++;
	nmin = (size_t)(p - min);
	while (*p && strchr("dmtu", *p) && nflags < 4)
		p++, nflags++;
	if (nmaj == 0 || nmaj > 3 || nmin == 0 || nmin > 3 || (*p != '\0' && *p != '.'))
		return;
	memcpy(out, maj, nmaj);
	out[nmaj] = '.';
	memcpy(out + nmaj + 1, min, nmin);
	out[nmaj + 1 + nmin] = '\0';
}

/* DT_SONAME of the file ("libpython3.9.so.1.0"), or NULL. */
static const char *dt_soname(Elf *elf, const struct sections *s)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t str, n, i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		str = linked_strtab(elf, s, &sh);
		d = str ? section_data(scn, &sh) : NULL;
		if (!d || d->d_type != ELF_T_DYN)
			continue;
		n = d->d_size / gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
		for (i = 0; i < n && i < INT_MAX; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_SONAME)
				return elf_strptr(elf, str, dyn.d_un.d_val);
		}
	}
	return NULL;
}

static void soname_version(Elf *elf, const struct sections *s, const char *name_hint, char out[16])
{
	version_from_name(name_hint, out);
	if (!out[0])
		version_from_name(dt_soname(elf, s), out);
}

/* ---------------------------------------------------------------- symbols */

enum {
	SYM_RUNTIME, SYM_VERSION, SYM_CODETYPE, SYM_TSTATE_CURRENT, SYM_INTERP_HEAD,
	SYM_GIL_LOCKED, SYM_GIL_HOLDER, SYM_GIL_MUTEX, SYM_GIL_COND, SYM_SWITCH_MUTEX,
	SYM_SWITCH_COND, SYM_CODE_COUNT, NSYMS
};
static const char *const sym_names[NSYMS] = {
	"_PyRuntime", "Py_Version", "PyCode_Type", "_PyThreadState_Current", "interp_head",
	"gil_locked", "gil_last_holder", "gil_mutex", "gil_cond", "switch_mutex",
	"switch_cond", "_Py_next_func_version",
};

struct found {
	uint64_t addr[NSYMS], size[NSYMS];
	bool have[NSYMS];
};

/* Look the wanted names up in one SHT_SYMTAB / SHT_DYNSYM section. */
static void scan_symtab(Elf *elf, const struct sections *s, Elf_Scn *scn,
			const GElf_Shdr *sh, struct found *f)
{
	size_t str = linked_strtab(elf, s, sh), entsize, n, i;
	Elf_Data *d;

	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!str || entsize == 0 || sh->sh_entsize != entsize)
		return;
	d = section_data(scn, sh);
	if (!d || d->d_type != ELF_T_SYM)
		return;
	n = d->d_size / entsize;
	for (i = 1; i < n && i < INT_MAX; i++) {     /* entry 0 is the null symbol */
		GElf_Sym sym;
		const char *name;
		int k, type;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_name == 0 || sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
		    (type != STT_OBJECT && type != STT_NOTYPE))
			continue;
		name = elf_strptr(elf, str, sym.st_name);
		if (!name || !strchr("_Pigs", name[0]))
			continue;
		for (k = 0; k < NSYMS; k++) {
			if (!f->have[k] && strcmp(name, sym_names[k]) == 0) {
				f->have[k] = true;
				f->addr[k] = sym.st_value;
				f->size[k] = sym.st_size;
			}
		}
	}
}

/* Read a u32 at a virtual address from the allocated section holding it. */
static int read_u32_vaddr(Elf *elf, uint64_t vaddr, bool msb, uint32_t *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		const uint8_t *b;
		uint64_t off;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    vaddr < sh.sh_addr || vaddr - sh.sh_addr >= sh.sh_size ||
		    sh.sh_size - (vaddr - sh.sh_addr) < 4)
			continue;
		d = section_data(scn, &sh);
		off = vaddr - sh.sh_addr;
		if (!d || d->d_size < 4 || off > d->d_size - 4)
			return -PBP_E_NOTPY;
		b = (const uint8_t *)d->d_buf + off;
		*out = msb ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
			   : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
		return 0;
	}
	return -PBP_E_NOTPY;
}

static void load_segments(Elf *elf, struct elf_info *out)
{
	size_t n, i;
	bool any = false;
	uint64_t lowest = 0;

	if (elf_getphdrnum(elf, &n) != 0)
		return;
	for (i = 0; i < n && i < INT_MAX; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset == 0) {
			out->first_load_vaddr = ph.p_vaddr;
			return;
		}
		if ((!any || ph.p_offset < lowest) && ph.p_vaddr >= ph.p_offset) {
			any = true;
			lowest = ph.p_offset;
			out->first_load_vaddr = ph.p_vaddr - ph.p_offset;
		}
	}
}

_Static_assert(SYM_SWITCH_COND - SYM_GIL_LOCKED + 1 == ELF_GIL_STATICS &&
	       SYM_GIL_COND - SYM_GIL_LOCKED == ELF_GIL_COND,
	       "the GIL statics are listed in the order of struct elf_info's gil_statics");

/* 3.6: the interpreter list's head and the GIL's statics stand for _PyRuntime. */
static void statics_36(const struct found *f, struct elf_info *out)
{
	if (!f->have[SYM_INTERP_HEAD] || !f->have[SYM_TSTATE_CURRENT])
		return;
	out->runtime_vaddr = f->addr[SYM_INTERP_HEAD];
	out->runtime_size = f->size[SYM_INTERP_HEAD];
	out->runtime_is_interp_head = true;
	for (int k = SYM_GIL_LOCKED; k <= SYM_SWITCH_COND; k++)
		out->gil_statics[k - SYM_GIL_LOCKED] = f->have[k] ? f->addr[k] : 0;
}

static int find_python(Elf *elf, const char *name_hint, struct elf_info *out)
{
	struct sections s;
	struct found f;
	GElf_Ehdr eh;
	Elf_Scn *scn;
	uint64_t sec_addr = 0, sec_size = 0;
	int pass;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -PBP_E_NOTPY;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -PBP_E_NOTPY;
	out->is_shared = eh.e_type == ET_DYN;
	load_segments(elf, out);
	if (get_sections(elf, &s) != 0)
		return -PBP_E_NOTPY;
	soname_version(elf, &s, name_hint, out->soname_version);

	memset(&f, 0, sizeof(f));
	/* .symtab first (complete), then .dynsym (what a stripped file keeps). */
	for (pass = 0; pass < 2; pass++) {
		Elf64_Word want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;

		scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				scan_symtab(elf, &s, scn, &sh, &f);
		}
	}
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || sh.sh_addr == 0)
			continue;
		name = section_name(elf, &s, &sh);
		if (name && strcmp(name, ".PyRuntime") == 0) {
			sec_addr = sh.sh_addr;
			sec_size = sh.sh_size;
			break;
		}
	}

	if (f.have[SYM_RUNTIME]) {
		out->runtime_vaddr = f.addr[SYM_RUNTIME];
		out->runtime_size = f.size[SYM_RUNTIME];
	} else if (sec_addr) {
		out->runtime_vaddr = sec_addr;
		out->runtime_size = sec_size;
		out->runtime_from_section = true;
	}
	if (f.have[SYM_VERSION]) {
		out->version_vaddr = f.addr[SYM_VERSION];
		if (read_u32_vaddr(elf, out->version_vaddr, eh.e_ident[EI_DATA] == ELFDATA2MSB,
				   &out->version_hex) != 0)
			out->version_hex = 0;
	}
	if (f.have[SYM_CODETYPE])
		out->pycode_type_vaddr = f.addr[SYM_CODETYPE];
	/* A uint32_t: a symbol of another size is not the count. */
	if (f.have[SYM_CODE_COUNT] && f.size[SYM_CODE_COUNT] == 4)
		out->code_count_vaddr = f.addr[SYM_CODE_COUNT];
	if (!out->runtime_vaddr)
		statics_36(&f, out);
	return out->runtime_vaddr ? 0 : -PBP_E_NOTPY;
}

/* The allocated section named name: its address and size. */
static int find_section(Elf *elf, const char *name, struct elf_section *out)
{
	struct sections s;
	struct elf_info li = { 0 };
	GElf_Ehdr eh;

	if (!elf || !gelf_getehdr(elf, &eh) || get_sections(elf, &s) != 0)
		return -PBP_E_NOTPY;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || sh.sh_addr == 0)
			continue;
		sn = section_name(elf, &s, &sh);
		if (!sn || strcmp(sn, name) != 0)
			continue;
		load_segments(elf, &li);
		out->addr = sh.sh_addr;
		out->size = sh.sh_size;
		out->first_load_vaddr = li.first_load_vaddr;
		out->is_shared = eh.e_type == ET_DYN;
		return 0;
	}
	return -PBP_E_NOENT;
}

int elf_find_section(const char *path, const char *name, struct elf_section *out)
{
	int fd, ret;
	Elf *elf;

	if (!out || !name)
		return -PBP_E_INVAL;
	memset(out, 0, sizeof(*out));
	elf = open_elf_file(path, &fd);
	ret = find_section(elf, name, out);
	close_elf(elf, fd, NULL);
	return ret;
}

int elf_find_python(const char *path, struct elf_info *out)
{
	int fd, ret;
	Elf *elf;

	if (!out)
		return -PBP_E_INVAL;
	memset(out, 0, sizeof(*out));
	elf = open_elf_file(path, &fd);
	ret = find_python(elf, path, out);
	close_elf(elf, fd, NULL);
	return ret;
}

int elf_find_python_mem(const void *buf, size_t len, struct elf_info *out)
{
	char *copy;
	Elf *elf;
	int ret;

	if (!out)
		return -PBP_E_INVAL;
	memset(out, 0, sizeof(*out));
	elf = open_elf_mem(buf, len, &copy);
	ret = find_python(elf, NULL, out);
	close_elf(elf, -1, copy);
	return ret;
}

/* ---------------------------------------------------- the version string */

/*
 * Fallback for CPython <= 3.10, which has no Py_Version: the PY_VERSION
 * literal ("3.8.18", "3.10.0rc2", "3.11.2+") is an argument of the
 * snprintf in Py_GetVersion() (the full banner is built at run time), so it
 * sits in .rodata as a NUL-terminated string. Two traps, both seen in real
 * builds:
 *
 *  - The linker merges string literals that are suffixes of longer ones.
 *    pyenv's builds have no standalone "3.8.18": it is the tail of the
 *    PREFIX string "/root/.pyenv/versions/3.8.18". So a candidate may start
 *    inside a string, provided the byte before it is a separator (printable
 *    punctuation or space) - never a letter, digit, '.' or '+', so that
 *    "13.8.1" or "v3.8.1" or "1.3.8.1" do not yield a version.
 *  - Other version-like strings exist: Debian's python3.11 also holds
 *    "3.2.0" (unicodedata's ucd_3_2_0). So a candidate's major.minor must
 *    equal the file's own when that is known: from its name, else its
 *    DT_SONAME, else its Py_Version, else getpath's "lib/python3.X"
 *    landmark (see landmark_version).
 *
 * A candidate matches ^3\.[0-9]+\.[0-9]+([abc]|rc)?[0-9]*\+?$ up to its NUL.
 * Standalone candidates (preceded by NUL) beat tail-merged ones; if the best
 * class holds two different strings the answer is ambiguous and we return
 * -PBP_E_NOTPY rather than guess. Only .rodata is searched (or, without a .rodata,
 * every allocated read-only non-executable PROGBITS section).
 */
#define VERSTR_MAX 32

/* Locale-independent classes (bytes here are raw file contents). */
static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* A byte that may precede a version merged into the tail of a longer string. */
static bool is_separator(uint8_t c)
{
	if (c == ' ')
		return true;
	if (c < 0x21 || c > 0x7e || c == '.' || c == '+' || is_digit(c))
		return false;
	return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
}

/* Length of a version string at p (not counting the NUL), or 0. */
static size_t match_version(const uint8_t *p, size_t avail, const char *want)
{
	size_t i = 0, n;

	if (avail < 6 || p[0] != '3' || p[1] != '.')
		return 0;
	i = 2;
	for (n = 0; i < avail && is_digit(p[i]); i++)
		n++;
	if (n == 0 || i >= avail || p[i] != '.')
		return 0;
	if (want[0] && (i != strlen(want) || memcmp(p, want, i) != 0))
		return 0;
	i++;
	for (n = 0; i < avail && is_digit(p[i]); i++)
		n++;
	if (n == 0 || i >= avail)
		return 0;
	if (p[i] == 'a' || p[i] == 'b' || p[i] == 'c')
		i++;
	else if (p[i] == 'r' && i + 1 < avail && p[i + 1] == 'c')
		i += 2;
	while (i < avail && is_digit(p[i]))
		i++;
	if (i < avail && p[i] == '+')
		i++;
	if (i >= avail || p[i] != '\0' || i >= VERSTR_MAX)
		return 0;
	return i;
}

struct vscan {
	const char *want;       /* "3.9" or "" */
	int best_class;         /* 0 none, 1 tail of a longer string, 2 standalone */
	bool ambiguous;
	char best[VERSTR_MAX];
};

static void scan_version_bytes(const uint8_t *b, size_t n, struct vscan *v)
{
	const uint8_t *p = b, *end = b + n;

	while ((p = memchr(p, '3', (size_t)(end - p))) != NULL) {
		size_t len, i = (size_t)(p - b);
		int cls;

		if (i == 0 || b[i - 1] == '\0')
			cls = 2;
		else
			cls = is_separator(b[i - 1]) ? 1 : 0;
		len = cls ? match_version(p, (size_t)(end - p), v->want) : 0;
		if (len) {
			char cand[VERSTR_MAX];

			memcpy(cand, p, len);
			cand[len] = '\0';
			if (cls > v->best_class) {
				v->best_class = cls;
				v->ambiguous = false;
				memcpy(v->best, cand, len + 1);
			} else if (cls == v->best_class && strcmp(cand, v->best) != 0) {
				v->ambiguous = true;
			}
			p += len;
		} else {
			p++;
		}
	}
}

/*
 * Without a name or DT_SONAME (a file opened as /proc/PID/map_files/A-B, a
 * static interpreter), major.minor comes from the file itself: Py_Version
 * when there is one, else the "lib/python3.8" / "python3.9" landmark that
 * getpath.c (3.x <= 3.10) builds from VERSION, a NUL-terminated string
 * "python3.<minor>" that starts the string or follows a '/'. Several
 * different landmarks mean no hint.
 */
static void landmark_version(Elf_Data *const *ds, size_t nd, char want[16])
{
	char found[16] = "";
	bool conflict = false;
	size_t k;

	for (k = 0; k < nd && !conflict; k++) {
		const uint8_t *b = ds[k]->d_buf, *p = b, *end = b + ds[k]->d_size;

		while (!conflict && (p = memchr(p, 'p', (size_t)(end - p))) != NULL) {
			size_t i = (size_t)(p - b) + 8, n = 0;

			if ((size_t)(end - p) < 8 || memcmp(p, "python3.", 8) != 0) {
				p++;
				continue;
			}
			while (i + n < ds[k]->d_size && n < 4 && is_digit(b[i + n]))
				n++;
			if (n > 0 && n < 4 && i + n < ds[k]->d_size && b[i + n] == '\0' &&
			    (p == b || p[-1] == '\0' || p[-1] == '/')) {
				char cand[16];

				memcpy(cand, "3.", 2);
				memcpy(cand + 2, b + i, n);
				cand[2 + n] = '\0';
				if (!found[0])
					memcpy(found, cand, sizeof(cand));
				else if (strcmp(found, cand) != 0)
					conflict = true;
			}
			p += 8;
		}
	}
	if (!conflict && found[0])
		memcpy(want, found, 16);
}

#define MAX_RO_SECTIONS 64

static int find_version_string(Elf *elf, const char *name_hint, char *out, size_t outlen)
{
	struct sections s;
	struct vscan v;
	Elf_Data *ds[MAX_RO_SECTIONS];
	size_t nd = 0, k;
	char want[16];
	Elf_Scn *scn;
	GElf_Ehdr eh;
	int pass;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    get_sections(elf, &s) != 0)
		return -PBP_E_NOTPY;

	/* Pass 0: .rodata only. Pass 1 (no .rodata at all): read-only data sections. */
	for (pass = 0; pass < 2 && nd == 0; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) != NULL && nd < MAX_RO_SECTIONS) {
			GElf_Shdr sh;
			const char *name;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
			    !(sh.sh_flags & SHF_ALLOC))
				continue;
			name = section_name(elf, &s, &sh);
			if (pass == 0 ? !name || strcmp(name, ".rodata") != 0
				      : (sh.sh_flags & (SHF_WRITE | SHF_EXECINSTR)) != 0)
				continue;
			d = section_data(scn, &sh);
			if (d)
				ds[nd++] = d;
		}
	}

	soname_version(elf, &s, name_hint, want);
	if (!want[0]) {
		struct elf_info ei;

		memset(&ei, 0, sizeof(ei));
		find_python(elf, NULL, &ei);
		if (ei.version_hex >> 24 == 3)
			snprintf(want, sizeof(want), "3.%u", (unsigned)(ei.version_hex >> 16 & 0xff));
		else
			landmark_version(ds, nd, want);
	}
	if (want[0] && strncmp(want, "3.", 2) != 0)
		return -PBP_E_NOTPY;

	memset(&v, 0, sizeof(v));
	v.want = want;
	for (k = 0; k < nd; k++)
		scan_version_bytes(ds[k]->d_buf, ds[k]->d_size, &v);
	if (!v.best_class || v.ambiguous)
		return -PBP_E_NOTPY;
	if (strlen(v.best) >= outlen)
		return -PBP_E_INVAL;    /* no room for its NUL */
	memcpy(out, v.best, strlen(v.best) + 1);
	return 0;
}

int elf_find_version_string(const char *path, char *out, size_t outlen)
{
	int fd, ret;
	Elf *elf;

	if (!out || outlen == 0)
		return -PBP_E_INVAL;
	out[0] = '\0';
	elf = open_elf_file(path, &fd);
	ret = find_version_string(elf, path, out, outlen);
	close_elf(elf, fd, NULL);
	return ret;
}

int elf_find_version_string_mem(const void *buf, size_t len, char *out, size_t outlen)
{
	char *copy;
	Elf *elf;
	int ret;

	if (!out || outlen == 0)
		return -PBP_E_INVAL;
	out[0] = '\0';
	elf = open_elf_mem(buf, len, &copy);
	ret = find_version_string(elf, NULL, out, outlen);
	close_elf(elf, -1, copy);
	return ret;
}
