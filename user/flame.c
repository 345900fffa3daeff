/* SPDX-License-Identifier: MIT */
/* Tree order and escaping shared by the flame graph writers; see flame.h. */
#include <stdlib.h>
#include <string.h>

#include "flame.h"

static int cmp_text(const void *x, const void *y, void *ctx)
{
	char *const *text = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = strcmp(text[a], text[b]);

	return c ? c : (a > b) - (a < b);   /* equal texts: keep a total order */
}

struct stack_ctx {
	const struct agg *a;
	const uint32_t *rank;
};

static int cmp_u32(uint32_t a, uint32_t b)
{
	return (a > b) - (a < b);
}

static int cmp_stack(const void *x, const void *y, void *ctx)
{
	const struct stack_ctx *c = ctx;
	const struct stack_tags *t1, *t2;
	uint32_t n1, n2, i;
	uint64_t c1, c2;
	const uint32_t *s1 = agg_stack(c->a, *(const uint32_t *)x, &n1, &c1, &t1);
	const uint32_t *s2 = agg_stack(c->a, *(const uint32_t *)y, &n2, &c2, &t2);
	int r;

	for (i = 0; i < n1 && i < n2; i++)
		if ((r = cmp_u32(c->rank[s1[i]], c->rank[s2[i]])))
			return r;
	if ((r = cmp_u32(n1, n2)))
		return r;
	/* Same frames, other tags: any fixed order, so the output is reproducible. */
	if ((r = cmp_u32(t1->pid, t2->pid)) || (r = cmp_u32(t1->tid, t2->tid)))
		return r;
	return cmp_u32(t1->status, t2->status);
}

static int rank_locs(const struct agg *a, struct flame_order *fo)
{
	char buf[2048];

	for (uint32_t i = 0; i < fo->nlocs; i++) {
		loc_format(a, i, buf, sizeof(buf));
		if (!(fo->text[i] = strdup(buf)))
			return -1;
		fo->byrank[i] = i;
	}
	qsort_r(fo->byrank, fo->nlocs, sizeof(*fo->byrank), cmp_text, fo->text);
	for (uint32_t r = 0; r < fo->nlocs; r++)
		fo->rank[fo->byrank[r]] = r;
	return 0;
}

int flame_order_build(const struct agg *a, struct flame_order *fo)
{
	struct stack_ctx ctx = { a, NULL };
	uint32_t nl = agg_nlocs(a), ns = agg_nstacks(a);

	memset(fo, 0, sizeof(*fo));
	fo->text = calloc(nl + 1, sizeof(*fo->text));
	fo->rank = calloc(nl + 1, sizeof(*fo->rank));
	fo->byrank = calloc(nl + 1, sizeof(*fo->byrank));
	fo->stacks = calloc(ns + 1, sizeof(*fo->stacks));
	fo->nlocs = nl;
	fo->nstacks = ns;
	if (!fo->text || !fo->rank || !fo->byrank || !fo->stacks || rank_locs(a, fo)) {
		flame_order_free(fo);
		return -1;
	}
	for (uint32_t i = 0; i < ns; i++)
		fo->stacks[i] = i;
	ctx.rank = fo->rank;
	qsort_r(fo->stacks, ns, sizeof(*fo->stacks), cmp_stack, &ctx);
	return 0;
}

void flame_order_free(struct flame_order *fo)
{
	if (fo->text)
		for (uint32_t i = 0; i < fo->nlocs; i++)
			free(fo->text[i]);
	free(fo->text);
	free(fo->rank);
	free(fo->byrank);
	free(fo->stacks);
	memset(fo, 0, sizeof(*fo));
}

uint32_t flame_lcp(const struct agg *a, uint32_t s1, uint32_t s2)
{
	uint32_t n1, n2, i;
	uint64_t c;
	const uint32_t *f1 = agg_stack(a, s1, &n1, &c, NULL);
	const uint32_t *f2 = agg_stack(a, s2, &n2, &c, NULL);

	for (i = 0; i < n1 && i < n2 && f1[i] == f2[i]; i++)
		;
	return i;
}

uint32_t flame_status_of(const char *label)
{
	for (uint32_t s = 0; s < ST__COUNT; s++)
		if (strcmp(label, status_label(s)) == 0)
			return s;
	return ST_UNKNOWN;
}

/* ------------------------------------------------------------ escaping */

#define REPLACEMENT 0xfffd

/* Decode one code point; returns the bytes it took (invalid: 1, cp = U+FFFD). */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		 : s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : 0;
	uint32_t v;

	if (n == 1) {
		*cp = s[0];
		return 1;
	}
	*cp = REPLACEMENT;
	if (!n)
		return 1;
	v = s[0] & (0x3f >> (n - 1));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)  /* also stops at the NUL */
			return 1;
		v = v << 6 | (s[i] & 0x3f);
	}
	/* No overlong forms, no surrogates, nothing past U+10FFFF. */
	if (v < min[n - 1] || (v >= 0xd800 && v < 0xe000) || v > 0x10ffff)
		return 1;
	*cp = v;
	return n;
}

static void put_utf8(FILE *o, uint32_t cp)
{
	if (cp < 0x80) {
		fputc((int)cp, o);
	} else if (cp < 0x800) {
		fputc((int)(0xc0 | cp >> 6), o);
		fputc((int)(0x80 | (cp & 0x3f)), o);
	} else if (cp < 0x10000) {
		fputc((int)(0xe0 | cp >> 12), o);
		fputc((int)(0x80 | (cp >> 6 & 0x3f)), o);
		fputc((int)(0x80 | (cp & 0x3f)), o);
	} else {
		fputc((int)(0xf0 | cp >> 18), o);
		fputc((int)(0x80 | (cp >> 12 & 0x3f)), o);
		fputc((int)(0x80 | (cp >> 6 & 0x3f)), o);
		fputc((int)(0x80 | (cp & 0x3f)), o);
	}
}

/*
 * JSON inside <script>: besides what JSON needs, '<' '>' '&' are escaped so
 * that no "</script>" or "<!--" can appear in the page's source, and U+2028/9
 * because older JavaScript parsers take them for line ends.
 */
static void put_json_cp(FILE *o, uint32_t cp)
{
	if (cp == '"' || cp == '\\')
		fprintf(o, "\\%c", (char)cp);
	else if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 || cp == 0x2029)
		fprintf(o, "\\u%04x", (unsigned)cp);
	else
		put_utf8(o, cp);
}

/* XML 1.0 allows no control characters but tab and line ends, and no U+FFFE/F. */
static void put_xml_cp(FILE *o, uint32_t cp)
{
	switch (cp) {
	case '&': fputs("&amp;", o); return;
	case '<': fputs("&lt;", o); return;
	case '>': fputs("&gt;", o); return;
	case '"': fputs("&quot;", o); return;
	case '\'': fputs("&#39;", o); return;
	}
	if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xfffe || cp == 0xffff)
		cp = REPLACEMENT;
	put_utf8(o, cp);
}

size_t flame_text_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	uint32_t cp;

	while (*p) {
		p += utf8_next(p, &cp);
		n++;
	}
	return n;
}

void flame_put(FILE *o, const char *s, enum flame_esc how, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	void (*put)(FILE *, uint32_t) = how == FLAME_JSON ? put_json_cp : put_xml_cp;
	size_t keep = max_chars && flame_text_len(s) > max_chars ? max_chars - 1 : (size_t)-1;
	uint32_t cp;

	for (size_t n = 0; *p && n < keep; n++) {
		p += utf8_next(p, &cp);
		put(o, cp);
	}
	if (*p)
		put(o, 0x2026);     /* "…": the text was cut */
}
