/* SPDX-License-Identifier: MIT */
/*
 * Names of native code: a file offset in a mapped file to its function,
 * through elfutils' libdwfl (.symtab, .dynsym, MiniDebugInfo in
 * .gnu_debugdata, and separate debug files found by build-id under
 * ROOT/usr/lib/debug/.build-id/). Each file is read once per build-id, so
 * fifty processes mapping one library share its symbols; a file without a
 * build-id is known by its device, inode, size and time. Not thread-safe.
 */
#ifndef PBP_SYMBOL_NATSYM_H
#define PBP_SYMBOL_NATSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NATSYM_FUNC_MAX 256
#define NATSYM_LIB_MAX 128

/* What is known of one native address. */
struct natframe {
	char func[NATSYM_FUNC_MAX];     /* "deflate", demangled for C++; "" when no symbol covers it */
	char lib[NATSYM_LIB_MAX];       /* the file's base name: "libz.so.1.2.13" */
	uint64_t rel;                   /* address in the file (ELF vaddr; file offset if unknown) */
	const struct natmap *map;       /* the mapping holding it (native_frame); valid until maps are read again */
};

struct natsym;
struct natmap;
struct natmod;          /* one file's symbols, shared by every path and process mapping it */

struct natsym *natsym_new(void);
void natsym_free(struct natsym *ns);

/*
 * The symbols of the file a process maps at path, tried as root + path
 * (root is where that process's files are, "/proc/PID/root": a
 * container), as path itself (maps names files as seen from our root: a
 * plain chroot), then as alt when not NULL (/proc/PID/map_files/START-END:
 * a deleted or replaced file, when we still have CAP_SYS_ADMIN). inode,
 * when not 0, is the one maps gave: a file by that name but another inode
 * is not taken. NULL when none can be opened or read as ELF (or memory ran
 * out): the caller names the frame by its library and offset. Pointers
 * stay valid until natsym_free.
 */
struct natmod *natsym_open(struct natsym *ns, const char *root, const char *path, const char *alt,
			   uint64_t inode);
/*
 * Name file offset off of m; lib is the base name out->lib gets. out->func
 * is "" when no symbol covers it (a stripped file, an offset in no loaded
 * segment). m NULL: no file, out->rel is off.
 */
void natsym_lookup(struct natsym *ns, struct natmod *m, const char *lib, uint64_t off,
		   struct natframe *out);

/* m's build-id in lower-case hex into hex ("" for none, or m NULL). */
void natsym_build_id(const struct natmod *m, char *hex, size_t len);

/* A C++ symbol's readable name into out; a name that is not mangled is copied. */
void natsym_demangle(const char *sym, char *out, size_t len);

/* Files read and lookups answered by the memo, since natsym_new. */
void natsym_stats(const struct natsym *ns, uint64_t *files, uint64_t *lookups, uint64_t *memo_hits);

#endif /* PBP_SYMBOL_NATSYM_H */
