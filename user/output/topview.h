/* SPDX-License-Identifier: MIT */
#ifndef PBP_OUTPUT_TOPVIEW_H
#define PBP_OUTPUT_TOPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct agg;
struct profile_meta;

/* top.c: per-function figures, a function being (name, file) whatever the line. */
struct func_stat {
	const char *name, *file;    /* the aggregate's strings */
	int min_line;               /* smallest line seen in it, -1 if none */
	uint64_t own;               /* samples with it as the innermost Python frame */
	uint64_t total;             /* samples with it on the stack, once per sample */
	uint64_t frames;            /* its frames in all samples, recursive ones included */
};

#define FUNC_NONE UINT32_MAX

struct functab {
	struct func_stat *f;        /* in order of first location */
	uint32_t n;
	uint32_t *of_loc;           /* location id -> index into f; FUNC_NONE for labels */
};

int functab_build(const struct agg *a, struct functab *t);     /* -PBP_E_NOMEM */
struct stack_tags;
/* Count only the stacks keep accepts (a thread's, for the live view); functions of the others stay, at 0. */
typedef bool (*functab_keep_fn)(const struct stack_tags *tags, void *ctx);
int functab_build_where(const struct agg *a, struct functab *t, functab_keep_fn keep, void *ctx);
void functab_free(struct functab *t);
/* The end-of-run table: the top `rows` (<= 0: 10) functions by own, then total, samples. */
void top_print(const struct agg *a, const struct profile_meta *m, FILE *o, int rows);

#endif /* PBP_OUTPUT_TOPVIEW_H */
