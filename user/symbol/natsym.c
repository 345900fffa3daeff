/* SPDX-License-Identifier: MIT */
/*
 * Native symbols through libdwfl (natsym.h). Each distinct file gets a Dwfl
 * of its own holding only that module, reported at the file's own
 * addresses: lookups are per file, whatever address a process loaded it
 * at, and two files can never overlap. libdwfl reads .symtab, .dynsym and
 * the xz-compressed .gnu_debugdata itself, and finds a separate debug file
 * by build-id under debuginfo_path, which is set to the process's own
 * ROOT/usr/lib/debug so a container's debug files are the ones read.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "symbol/natsym.h"
#include "core/errors.h"
#include "core/search.h"

/* libstdc++'s demangler, the one C++ programs' own names follow (C ABI). */
typedef char *demangle_fn(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_SEGS 16
#define MEMO 4096               /* power of two */
#define BUILD_ID_MAX 64

struct natmod {
	struct natmod *next;
	uint8_t id[BUILD_ID_MAX];
	size_t idlen;           /* 0: no build-id; found again only by its file key */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;
	struct { uint64_t off, filesz, vaddr; } seg[MAX_SEGS];
	int nseg;
	char *debugpath;        /* the Dwfl's debuginfo_path */
	Dwfl_Callbacks cb;
	struct symrange *ranges;        /* its sized symbols by address, read at its first lookup */
	size_t nranges;
	bool ranges_read;
};

/*
 * A sized symbol's addresses [lo, hi) (the Dwfl's, bias included); maxhi:
 * the highest hi of it and every range before it; name: libdwfl's name for
 * an address in it, once asked (NULL before), when that was this symbol.
 */
struct symrange {
	uint64_t lo, hi, maxhi;
	const char *name;
};

/* A file seen, by what stat says of it: opened again, it is not read again. */
struct natfile {
	struct natfile *next;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct natmod *mod;
};

struct memo {
	const struct natmod *mod;
	uint64_t off;
	struct natframe f;
};

struct natsym {
	struct natmod *mods;
	struct natfile *files;
	struct memo *memo;
	uint64_t nfiles, lookups, hits;
};

/*
 * libdw starts once per process at its first Dwfl, loading its debuginfod
 * client and that client's libraries (40 to 75 ms here): a Dwfl made and
 * dropped at once has that done before any sample waits for it.
 */
static void start_libdw(void)
{
	static const Dwfl_Callbacks cb = { .find_elf = dwfl_build_id_find_elf,
					   .find_debuginfo = dwfl_standard_find_debuginfo };
	Dwfl *d = dwfl_begin(&cb);

	if (d)
		dwfl_end(d);
}

/*
 * Every page of p written once now, before sampling: the memo's pages were
 * otherwise faulted in one by one as new addresses were sampled, 30 to 60
 * us each on the test machine's virtualised memory, the native leaf's
 * main cost per sample in steady state. Volatile: a compiler would drop
 * a memset of zeros into calloc's memory.
 */
static void touch(void *p, size_t len)
{
	volatile char *c = p;

	for (size_t i = 0; i < len; i += 4096)
		c[i] = 0;
}

struct natsym *natsym_new(void)
{
	struct natsym *ns = calloc(1, sizeof(*ns));

	if (ns && !(ns->memo = calloc(MEMO, sizeof(*ns->memo)))) {
		free(ns);
		ns = NULL;
	}
	if (ns) {
		touch(ns->memo, MEMO * sizeof(*ns->memo));
		elf_version(EV_CURRENT);
		start_libdw();
	}
	return ns;
}

void natsym_free(struct natsym *ns)
{
	if (!ns)
		return;
	for (struct natmod *m = ns->mods, *n; m; m = n) {
		n = m->next;
		dwfl_end(m->dwfl);
		free(m->debugpath);
		free(m->ranges);
		free(m);
	}
	for (struct natfile *f = ns->files, *n; f; f = n) {
		n = f->next;
		free(f);
	}
	free(ns->memo);
	free(ns);
}

static struct natfile *file_known(struct natsym *ns, const struct stat *st)
{
	for (struct natfile *f = ns->files; f; f = f->next)
		if (f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
		    f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return f;
	return NULL;
}

static struct natmod *mod_by_id(struct natsym *ns, const void *id, size_t len)
{
	for (struct natmod *m = ns->mods; m && len; m = m->next)
		if (m->idlen == len && memcmp(m->id, id, len) == 0)
			return m;
	return NULL;
}

/* The PT_LOAD segments, to turn a file offset into the address the file links it at. */
static void read_segments(struct natmod *m)
{
	Elf *elf = dwfl_module_getelf(m->mod, &m->bias);
	size_t n = 0;

	if (!elf || elf_getphdrnum(elf, &n) != 0)
		return;
	for (size_t i = 0; i < n && m->nseg < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			m->seg[m->nseg].off = ph.p_offset;
			m->seg[m->nseg].filesz = ph.p_filesz;
			m->seg[m->nseg].vaddr = ph.p_vaddr;
			m->nseg++;
		}
	}
}

/* A Dwfl holding the one file open on fd (which it takes), or NULL. */
static struct natmod *mod_report(const char *root, const char *file, int fd)
{
	struct natmod *m = calloc(1, sizeof(*m));
	const char *base = strrchr(file, '/');

	if (!m || asprintf(&m->debugpath, "%s/usr/lib/debug", root) < 0) {
		free(m);
		close(fd);
		return NULL;
	}
	m->cb.find_elf = dwfl_build_id_find_elf;
	m->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	m->cb.section_address = dwfl_offline_section_address;
	m->cb.debuginfo_path = &m->debugpath;
	m->dwfl = dwfl_begin(&m->cb);
	if (m->dwfl) {
		dwfl_report_begin(m->dwfl);
		m->mod = dwfl_report_elf(m->dwfl, base ? base + 1 : file, file, fd, 0, false);
		dwfl_report_end(m->dwfl, NULL, NULL);
	}
	if (!m->mod) {
		if (m->dwfl)
			dwfl_end(m->dwfl);
		else
			close(fd);
		free(m->debugpath);
		free(m);
		return NULL;
	}
	read_segments(m);
	return m;
}

/* The module for the file open on fd (kept, and then it owns fd), or NULL. */
static struct natmod *mod_for(struct natsym *ns, const char *root, const char *file, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id = NULL;
	ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	struct natmod *m = NULL;

	if (len > 0 && len <= BUILD_ID_MAX)
		m = mod_by_id(ns, id, (size_t)len);
	if (m) {
		elf_end(elf);
		close(fd);
		return m;
	}
	if (elf && elf_kind(elf) == ELF_K_ELF)
		m = mod_report(root, file, fd);
	else
		close(fd);
	if (m && len > 0 && len <= BUILD_ID_MAX) {
		memcpy(m->id, id, (size_t)len);
		m->idlen = (size_t)len;
	}
	elf_end(elf);
	if (m) {
		m->next = ns->mods;
		ns->mods = m;
		ns->nfiles++;
	}
	return m;
}

/* The i-th way to open the file (natsym_open), or -1 when there is none or it fails. */
static int open_as(int i, const char *root, const char *path, const char *alt, char *file, size_t len)
{
	if (i == 0 && path[0] == '/')
		snprintf(file, len, "%s%s", root, path);
	else if (i == 1 && path[0] == '/' && root[0])
		snprintf(file, len, "%s", path);
	else if (i == 2 && alt)
		snprintf(file, len, "%s", alt);
	else
		return -1;
	return open(file, O_RDONLY | O_CLOEXEC);
}

/* The first way that opens a regular file with the inode maps gave. */
static int open_file(const char *root, const char *path, const char *alt, uint64_t inode,
		     char *file, size_t len, struct stat *st)
{
	for (int i = 0; i < 3; i++) {
		int fd = open_as(i, root, path, alt, file, len);

		if (fd < 0)
			continue;
		if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) && (!inode || st->st_ino == inode))
			return fd;
		close(fd);
	}
	return -1;
}

struct natmod *natsym_open(struct natsym *ns, const char *root, const char *path, const char *alt,
			   uint64_t inode)
{
	char file[4096 + 64];
	struct natfile *f;
	struct stat st;
	int fd = open_file(root, path, alt, inode, file, sizeof(file), &st);

	if (fd < 0)
		return NULL;
	if ((f = file_known(ns, &st))) {
		close(fd);
		return f->mod;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return NULL;
	}
	*f = (struct natfile){ ns->files, st.st_dev, st.st_ino, st.st_size, st.st_mtim,
			       mod_for(ns, root, file, fd) };
	ns->files = f;     /* one that is no ELF is remembered as such (mod NULL) */
	return f->mod;
}

/*
 * Loaded at the first C++ name, not linked: libstdc++ and its libraries are
 * megabytes of address space a profile of C code never needs (a run under
 * ulimit -v has that much less). NULL when it cannot be loaded: names stay
 * mangled.
 */
static demangle_fn *cxa_demangle(void)
{
	static demangle_fn *fn;
	static bool tried;
	void *lib;

	if (!tried) {
		tried = true;
		lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (lib)
			*(void **)&fn = dlsym(lib, "__cxa_demangle");
	}
	return fn;
}

void natsym_build_id(const struct natmod *m, char *hex, size_t len)
{
	size_t n = 0;

	if (len)
		hex[0] = '\0';
	for (size_t i = 0; m && i < m->idlen && n + 3 <= len; i++, n += 2)
		snprintf(hex + n, 3, "%02x", m->id[i]);
}

void natsym_demangle(const char *sym, char *out, size_t len)
{
	demangle_fn *fn = strncmp(sym, "_Z", 2) == 0 ? cxa_demangle() : NULL;
	int status = -1;
	char *d = fn ? fn(sym, NULL, NULL, &status) : NULL;

	snprintf(out, len, "%s", d && status == 0 ? d : sym);
	free(d);
}

/* The address the file links offset off at, or false when no loaded segment holds it. */
static bool link_addr(const struct natmod *m, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < m->nseg; i++)
		if (off >= m->seg[i].off && off - m->seg[i].off < m->seg[i].filesz) {
			*vaddr = off - m->seg[i].off + m->seg[i].vaddr;
			return true;
		}
	return false;
}

static int range_cmp(const void *a, const void *b)
{
	const struct symrange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * m's sized symbols sorted, so that an address no symbol covers is known
 * nameless without libdwfl, and an address in a function named before
 * needs no libdwfl lookup: dwfl_module_addrinfo took 58 us on average per
 * new address of stripped libz here (wall clock, its tables' page faults
 * included), and a new address came in 5 % of zlib's leaves. Left empty
 * (every lookup libdwfl's) when unreadable.
 */
static void read_ranges(struct natmod *m)
{
	int n = dwfl_module_getsymtab(m->mod);
	uint64_t maxhi = 0;

	m->ranges_read = true;
	if (n <= 0 || !(m->ranges = calloc((size_t)n, sizeof(*m->ranges))))
		return;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;

		/* Every symbol libdwfl could name an address by: defined, with a size. */
		if (dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, NULL, NULL) &&
		    sym.st_size && shndx != SHN_UNDEF)
			m->ranges[m->nranges++] = (struct symrange){ addr, addr + sym.st_size, 0, NULL };
	}
	qsort(m->ranges, m->nranges, sizeof(*m->ranges), range_cmp);
	for (size_t i = 0; i < m->nranges; i++)
		m->ranges[i].maxhi = maxhi = m->ranges[i].hi > maxhi ? m->ranges[i].hi : maxhi;
}

/*
 * The range covering addr when it is the last starting at or before it;
 * NULL with *none set when no range covers addr, NULL alone when only an
 * earlier range does (overlapping symbols: libdwfl decides).
 */
static bool range_starts_by(const void *elem, const void *addr)
{
	return ((const struct symrange *)elem)->lo <= *(const uint64_t *)addr;
}

static struct symrange *range_of(struct natmod *m, uint64_t addr, bool *none)
{
	size_t lo = search_first(m->ranges, m->nranges, sizeof(*m->ranges), &addr, range_starts_by);

	*none = lo == 0 || m->ranges[lo - 1].maxhi <= addr;
	return !*none && addr < m->ranges[lo - 1].hi ? &m->ranges[lo - 1] : NULL;
}

static void name_in(struct natmod *m, uint64_t off, struct natframe *out)
{
	struct symrange *r = NULL;
	GElf_Off in = 0;
	GElf_Sym sym;
	const char *name;
	bool none = false;

	out->func[0] = '\0';
	out->rel = off;
	if (!link_addr(m, off, &out->rel))
		return;
	if (!m->ranges_read)
		read_ranges(m);
	if (m->nranges && !(r = range_of(m, out->rel + m->bias, &none)) && none)
		return;
	if (!r || !r->name) {
		name = dwfl_module_addrinfo(m->mod, out->rel + m->bias, &in, &sym, NULL, NULL, NULL);
		/*
		 * Only a symbol whose size covers the address names it: in a stripped
		 * library the nearest symbol before an internal function (or one with
		 * no size, as hand-written assembly's often are) is another function.
		 */
		if (!name || !name[0] || in >= sym.st_size)
			return;
		/* The range's own symbol: its other addresses take the name without libdwfl. */
		if (r && out->rel + m->bias - in == r->lo && sym.st_size == r->hi - r->lo)
			r->name = name;
	} else {
		name = r->name;
	}
	natsym_demangle(name, out->func, sizeof(out->func));
}

void natsym_lookup(struct natsym *ns, struct natmod *m, const char *lib, uint64_t off,
		   struct natframe *out)
{
	uint64_t h = ((uint64_t)(uintptr_t)m ^ off * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	struct memo *e = &ns->memo[(h >> 40) & (MEMO - 1)];

	ns->lookups++;
	if (m && e->mod == m && e->off == off && strcmp(e->f.lib, lib) == 0) {
		ns->hits++;
		*out = e->f;
		return;
	}
	snprintf(out->lib, sizeof(out->lib), "%s", lib);
	out->func[0] = '\0';
	out->rel = off;
	out->map = NULL;
	if (!m)
		return;
	name_in(m, off, out);
	e->mod = m;
	e->off = off;
	e->f = *out;
}

void natsym_stats(const struct natsym *ns, uint64_t *files, uint64_t *lookups, uint64_t *memo_hits)
{
	*files = ns->nfiles;
	*lookups = ns->lookups;
	*memo_hits = ns->hits;
}
