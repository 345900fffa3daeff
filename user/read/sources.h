/* SPDX-License-Identifier: MIT */
#ifndef PBP_READ_SOURCES_H
#define PBP_READ_SOURCES_H

#include <stddef.h>
#include <stdint.h>

struct agg;

/*
 * The source files of a profile's Python frames, for the html page's line
 * heat: each (process root, file) its stacks name, ranked by the samples of
 * the stacks through it, the hottest read whole while they fit the budget,
 * so the page stays one file of bounded size. A file over SRC_FILE_MAX, or
 * past the budget, is listed with why it was left out.
 */
#define SRC_BUDGET (2u << 20)       /* bytes of source a page embeds, all files together */
#define SRC_FILE_MAX (512u << 10)   /* bytes of one file */
/* Files listed, the hottest (each not shown says why: 200 KB at most); the rest are not named. */
#define SRC_MAX_FILES 1024
/* Not a root: why a process's files cannot be read (see srcroot.h, which has the same codes). */
#define SRC_NO_ROOT UINT32_MAX          /* its root was never opened: it had exited first */
#define SRC_ROOTS_FULL (UINT32_MAX - 1) /* too many roots were held already */
#define SRC_ROOT_DENIED (UINT32_MAX - 2) /* not allowed to open its root */
#define SRC_IS_ROOT(r) ((r) < SRC_ROOT_DENIED)

struct src_file {
	uint32_t root;          /* the reader's root index, or why none (SRC_NO_ROOT, ...) */
	const char *path;       /* the frames' file name (the aggregate's string) */
	uint64_t samples;       /* of the stacks through it, each once */
	char *text;             /* read whole: its contents (NUL-terminated), else NULL */
	size_t len;
	char why[160];          /* not read: why, for the page */
};

struct src_pid {
	uint32_t pid, root;
};

struct sources {
	struct src_file *f;     /* hottest first */
	uint32_t n;
	struct src_pid *pids;   /* which root each process of the stacks was read under */
	uint32_t npids;
	size_t embedded;        /* bytes of text read */
};

/*
 * The reader: 0 with *text and *len, -PBP_E_LIMIT with *size when the file
 * is larger than max, another -PBP_E_* with why filled.
 */
struct src_reader {
	uint32_t (*root_of)(void *ctx, uint32_t pid);   /* a root, or why none (SRC_NO_ROOT, ...) */
	int (*read)(void *ctx, uint32_t root, const char *path, size_t max, char **text, size_t *len,
		    size_t *size, char *why, size_t whylen);
	void *ctx;
};

/* Rank a's files and read the hottest within the budget: 0 or -PBP_E_NOMEM. */
int sources_collect(const struct agg *a, const struct src_reader *rd, struct sources *s);
void sources_free(struct sources *s);

#endif /* PBP_READ_SOURCES_H */
