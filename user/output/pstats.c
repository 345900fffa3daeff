/* SPDX-License-Identifier: MIT */
/*
 * The file Python's pstats module loads (what cProfile's dump_stats writes):
 * one marshal'ed dict
 *
 *   {(file, line, name): (cc, nc, tt, ct, {(file, line, name): (nc, cc, tt, ct)})}
 *
 * the inner dict holding the callers of each function. Note the inner tuple
 * order: cProfile stores caller entries as (nc, cc, tt, ct), the reverse of
 * the outer (cc, nc, ...), and pstats' callers/callees listings read them so.
 *
 * A sampling profile has no calls, only stacks, so the figures are sample
 * counts mapped onto cProfile's meaning (see top.c for "function"):
 *   line  the smallest line any sample saw in the function: the def line is
 *         unknown, and this gives every function one stable key;
 *   nc    the function's frames over all samples, recursive ones included;
 *   cc    samples with the function on the stack (its "primitive calls":
 *         a recursive sample counts once, so nc/cc shows the recursion);
 *   tt    samples with it as the innermost Python frame, times 1/hz seconds;
 *   ct    cc times 1/hz seconds: recursion never counts a sample twice.
 * A caller edge (f -> g) is every pair of adjacent frames f, g with the same
 * rules: nc counts the pairs, cc and ct the samples holding the pair at least
 * once, tt the samples where g is innermost directly under f.
 * With hz 0 (unknown) times are in samples.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "core/text.h"
#include "output/topview.h"
#include "output/writers.h"

/* ------------------------------------------------------------- marshal */

/* Type codes of CPython's marshal format (Python/marshal.c), version 2 and later. */
#define M_NULL '0'          /* ends a dict */
#define M_INT 'i'           /* int32, little endian */
#define M_LONG 'l'          /* int32 digit count, then 15-bit digits as uint16 */
#define M_BINARY_FLOAT 'g'  /* IEEE 754 double, little endian */
#define M_SMALL_TUPLE ')'   /* uint8 size */
#define M_DICT '{'
#define M_UNICODE 'u'       /* uint32 length, UTF-8 */
#define M_ASCII 'a'         /* uint32 length */
#define M_SHORT_ASCII 'z'   /* uint8 length */

static void w_u32(FILE *o, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		fputc((v >> (8 * i)) & 0xff, o);
}

static void w_int(FILE *o, uint64_t v)
{
	uint32_t ndigits = 0;

	if (v <= 0x7fffffff) {
		fputc(M_INT, o);
		w_u32(o, (uint32_t)v);
		return;
	}
	for (uint64_t t = v; t; t >>= 15)
		ndigits++;
	fputc(M_LONG, o);
	w_u32(o, ndigits);
	for (; v; v >>= 15) {
		fputc(v & 0xff, o);
		fputc((v >> 8) & 0x7f, o);
	}
}

static void w_float(FILE *o, double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	fputc(M_BINARY_FLOAT, o);
	for (int i = 0; i < 8; i++)
		fputc((bits >> (8 * i)) & 0xff, o);
}

/* Python decodes 'u' strictly: invalid UTF-8 from the target becomes U+FFFD. */
static void w_str(FILE *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0, n;
	bool ascii = true;

	for (; *p; p += n ? n : 1) {
		n = utf8_seq_len(p);
		len += n ? n : 3;
		ascii = ascii && n == 1;
	}
	if (ascii && len < 256) {
		fputc(M_SHORT_ASCII, o);
		fputc((int)len, o);
	} else {
		fputc(ascii ? M_ASCII : M_UNICODE, o);
		w_u32(o, (uint32_t)len);
	}
	for (p = (const unsigned char *)s; *p; p += n ? n : 1) {
		n = utf8_seq_len(p);
		if (n)
			fwrite(p, 1, n, o);
		else
			fputs("\xef\xbf\xbd", o);
	}
}

static void w_key(FILE *o, const struct func_stat *f)
{
	fputc(M_SMALL_TUPLE, o);
	fputc(3, o);
	w_str(o, f->file);
	w_int(o, f->min_line > 0 ? (uint64_t)f->min_line : 0);
	w_str(o, f->name);
}

/* ------------------------------------------------------------- caller edges */

struct edge {
	uint32_t caller, callee;
	uint32_t seen;          /* stack index + 1 of the last stack that counted cc */
	uint64_t nc, cc, tt;
};

struct edges {
	struct edge *e;
	uint32_t n, cap;
	uint32_t *slots;        /* open addressing, index + 1, 0 = empty */
	uint32_t nslots;
};

static uint32_t edge_hash(uint32_t caller, uint32_t callee)
{
	return (caller * 0x9e3779b1u) ^ (callee * 0x85ebca6bu);
}

static int edges_grow(struct edges *g)
{
	uint32_t ncap = g->cap ? g->cap * 2 : 256, nslots = ncap * 2;
	struct edge *e = realloc(g->e, ncap * sizeof(*e));
	uint32_t *slots;

	if (!e)
		return -PBP_E_NOMEM;
	g->e = e;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < g->n; i++) {
		uint32_t s = edge_hash(e[i].caller, e[i].callee) & (nslots - 1);

		while (slots[s])
			s = (s + 1) & (nslots - 1);
		slots[s] = i + 1;
	}
	free(g->slots);
	g->slots = slots;
	g->nslots = nslots;
	g->cap = ncap;
	return 0;
}

static struct edge *edge_get(struct edges *g, uint32_t caller, uint32_t callee)
{
	uint32_t s;

	if (g->n == g->cap && edges_grow(g) != 0)
		return NULL;
	for (s = edge_hash(caller, callee) & (g->nslots - 1); g->slots[s]; s = (s + 1) & (g->nslots - 1)) {
		struct edge *e = &g->e[g->slots[s] - 1];

		if (e->caller == caller && e->callee == callee)
			return e;
	}
	g->e[g->n] = (struct edge){ .caller = caller, .callee = callee };
	g->slots[s] = ++g->n;
	return &g->e[g->n - 1];
}

/* The adjacent pairs of Python frames of stack i (labels skipped). */
static int count_edges(const struct agg *a, const struct functab *t, uint32_t i, struct edges *g)
{
	uint32_t n, prev = FUNC_NONE;
	uint64_t count;
	const uint32_t *locs = agg_stack(a, i, &n, &count, NULL);
	struct edge *e = NULL;

	for (uint32_t j = 0; j < n; j++) {
		uint32_t f = t->of_loc[locs[j]];

		if (f == FUNC_NONE)
			continue;
		e = NULL;
		if (prev != FUNC_NONE) {
			e = edge_get(g, prev, f);
			if (!e)
				return -PBP_E_NOMEM;
			e->nc += count;
			if (e->seen != i + 1) {
				e->seen = i + 1;
				e->cc += count;
			}
		}
		prev = f;
	}
	if (e)  /* the pair ending in the innermost Python frame */
		e->tt += count;
	return 0;
}

static int by_callee(const void *pa, const void *pb)
{
	const struct edge *x = pa, *y = pb;

	if (x->callee != y->callee)
		return x->callee < y->callee ? -1 : 1;
	return x->caller < y->caller ? -1 : x->caller > y->caller;
}

/* ------------------------------------------------------------- the dict */

/* A division, not a product with 1/hz: the result is then exactly Python's n / hz. */
static double secs(uint64_t samples, unsigned hz)
{
	return hz ? (double)samples / hz : (double)samples;
}

static void w_callers(FILE *o, const struct functab *t, const struct edge *e, uint32_t n, unsigned hz)
{
	fputc(M_DICT, o);
	for (uint32_t k = 0; k < n; k++) {
		w_key(o, &t->f[e[k].caller]);
		fputc(M_SMALL_TUPLE, o);
		fputc(4, o);
		w_int(o, e[k].nc);
		w_int(o, e[k].cc);
		w_float(o, secs(e[k].tt, hz));
		w_float(o, secs(e[k].cc, hz));
	}
	fputc(M_NULL, o);
}

/* g->e sorted by callee: each function's callers are one run of it. */
static void w_stats(FILE *o, const struct functab *t, const struct edges *g, unsigned hz)
{
	uint32_t k = 0;

	fputc(M_DICT, o);
	for (uint32_t f = 0; f < t->n; f++) {
		uint32_t start = k;

		while (k < g->n && g->e[k].callee == f)
			k++;
		w_key(o, &t->f[f]);
		fputc(M_SMALL_TUPLE, o);
		fputc(5, o);
		w_int(o, t->f[f].total);
		w_int(o, t->f[f].frames);
		w_float(o, secs(t->f[f].own, hz));
		w_float(o, secs(t->f[f].total, hz));
		/* no edges at all: g->e is NULL, and NULL + 0 is undefined */
		w_callers(o, t, k > start ? g->e + start : NULL, k - start, hz);
	}
	fputc(M_NULL, o);
}

int pstats_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct edges g = { 0 };
	struct functab t;
	int err = functab_build(a, &t);

	for (uint32_t i = 0; !err && i < agg_nstacks(a); i++)
		err = count_edges(a, &t, i, &g);
	if (!err) {
		if (g.n)
			qsort(g.e, g.n, sizeof(*g.e), by_callee);
		w_stats(o, &t, &g, m->hz);
	}
	free(g.e);
	free(g.slots);
	functab_free(&t);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
