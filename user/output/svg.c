/* SPDX-License-Identifier: MIT */
/*
 * Static flame graph as SVG: 1200 px wide, root on top, one row per stack
 * depth, a <title> per frame for the viewer's tooltip. Python frames are
 * coloured by where their code lives (application warm, installed packages
 * green, standard library blue; hue by package or file), status leaves by
 * status, with a legend. For zooming and searching use the html format.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "aggregate/status.h"
#include "core/text.h"
#include "output/flame.h"
#include "output/writers.h"

#define WIDTH 1200
#define PAD 10
#define ROW 16
#define TOP 52                  /* below the two header lines */
#define CHAR_W 6.62             /* 11 px DejaVu Sans Mono; Liberation Mono is narrower */
#define MIN_W 0.3               /* px: narrower frames are left out, as are their children */
#define ROOT UINT32_MAX         /* loc of the "all" node */

struct node {
	uint32_t loc, parent, depth;
	uint64_t total;
};

struct tree {
	struct node *n;
	uint32_t len, cap, maxdepth;
};

/* ------------------------------------------------------------ the tree */

static int tree_push(struct tree *t, uint32_t loc, uint32_t parent, uint32_t depth)
{
	if (t->len == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		struct node *n = realloc(t->n, cap * sizeof(*n));

		if (!n)
			return -PBP_E_NOMEM;
		t->n = n;
		t->cap = cap;
	}
	t->n[t->len++] = (struct node){ loc, parent, depth, 0 };
	if (depth > t->maxdepth)
		t->maxdepth = depth;
	return 0;
}

static uint32_t max_stack_len(const struct agg *a)
{
	uint32_t most = 0, n;
	uint64_t c;

	for (uint32_t i = 0; i < agg_nstacks(a); i++) {
		agg_stack(a, i, &n, &c, NULL);
		if (n > most)
			most = n;
	}
	return most;
}

/*
 * Merge the stacks in tree order (flame.h): a stack's first LCP(previous,
 * this) frames are the previous stack's nodes, the rest are new. Nodes come
 * out in pre-order, children sorted by name.
 */
static int tree_build(const struct agg *a, const struct flame_order *fo, struct tree *t)
{
	uint32_t *path = calloc(max_stack_len(a) + 1, sizeof(*path));
	int err = path ? tree_push(t, ROOT, ROOT, 0) : -PBP_E_NOMEM;

	for (uint32_t k = 0; !err && k < fo->nstacks; k++) {
		uint32_t s = fo->stacks[k], n;
		uint64_t count;
		const uint32_t *f = agg_stack(a, s, &n, &count, NULL);

		for (uint32_t d = k ? flame_lcp(a, fo->stacks[k - 1], s) : 0; !err && d < n; d++) {
			err = tree_push(t, f[d], path[d], d + 1);
			path[d + 1] = t->len - 1;
		}
		for (uint32_t d = 0; !err && d <= n; d++)
			t->n[path[d]].total += count;
	}
	free(path);
	return err;
}

/* ------------------------------------------------------------ colours */

static uint32_t fnv(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n && s[i]; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static double dabs(double v)
{
	return v < 0 ? -v : v;
}

/* Hue in degrees, s and l in [0, 1] -> "#rrggbb" (hex: SVG 1.1 has no hsl()). */
static void hsl_hex(unsigned hue, double s, double l, char out[8])
{
	static const int order[6][2] = { { 0, 1 }, { 1, 0 }, { 1, 2 }, { 2, 1 }, { 2, 0 }, { 0, 2 } };
	double hp = (double)(hue % 360) / 60, c = (1 - dabs(2 * l - 1)) * s, m = l - c / 2;
	int sector = (int)hp;
	double x = c * (1 - dabs(hp - (sector & ~1) - 1));   /* hp mod 2, minus 1 */
	double rgb[3] = { 0, 0, 0 };

	rgb[order[sector][0]] = c;     /* the strongest channel of this sixth of the wheel */
	rgb[order[sector][1]] = x;     /* the one rising or falling */
	snprintf(out, 8, "#%02x%02x%02x", (unsigned)((rgb[0] + m) * 255 + 0.5),
		 (unsigned)((rgb[1] + m) * 255 + 0.5), (unsigned)((rgb[2] + m) * 255 + 0.5));
}

/* The package under site-/dist-packages, else NULL; *len gets its name's length. */
static const char *package_of(const char *file, size_t *len)
{
	const char *p = strstr(file, "site-packages/");

	if (!p)
		p = strstr(file, "dist-packages/");
	if (!p)
		return NULL;
	p += strlen("site-packages/");
	*len = strcspn(p, "/.");
	return p;
}

static bool is_stdlib(const char *file)
{
	const char *p = strstr(file, "/lib/python");

	return strncmp(file, "<frozen", 7) == 0 || (p && p[11] >= '0' && p[11] <= '9');
}

static void py_colour(const char *name, const char *file, char out[8])
{
	size_t klen = strlen(file);
	const char *key = package_of(file, &klen);
	uint32_t base = 0, span = 50, h, n = fnv(name, strlen(name));

	if (key) {
		base = 85;
		span = 75;
	} else if (is_stdlib(file)) {
		base = 195;
		span = 40;
	}
	h = fnv(key ? key : file, klen);
	hsl_hex(base + h % span, (58 + n % 24) / 100.0, (62 + (n >> 8) % 12) / 100.0, out);
}

static void colour_of(const struct agg *a, uint32_t loc, char out[8])
{
	const char *name, *file;
	uint32_t kind;
	int line;

	if (loc == ROOT) {
		strcpy(out, "#dcdce4");
		return;
	}
	agg_loc_info(a, loc, &name, &file, &line, &kind);
	if (kind == LOC_PY)
		py_colour(name, file, out);
	else if (kind == LOC_STATUS)
		strcpy(out, status_info(flame_status_of(name))->colour);
	else
		strcpy(out, kind == LOC_THREAD ? "#c8cbd6" : "#b5b9ca");
}

/* ------------------------------------------------------------ output */

static void put_count(FILE *o, uint64_t v)
{
	if (v >= 1000) {
		put_count(o, v / 1000);
		fprintf(o, ",%03u", (unsigned)(v % 1000));
	} else {
		fprintf(o, "%u", (unsigned)v);
	}
}

static void write_header(FILE *o, const struct agg *a, const struct profile_meta *m, uint32_t height)
{
	const char *mode = m->mode ? m->mode : "cpu";

	fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%u\" "
		"viewBox=\"0 0 %d %u\" font-family=\"DejaVu Sans Mono, Liberation Mono, monospace\" "
		"font-size=\"11\">\n<style>.f:hover rect { stroke: #000; stroke-width: 0.7; }</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n", WIDTH, height, WIDTH, height);
	fputs("<text x=\"600\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-family=\"sans-serif\">"
	      "pybpfprof flame graph: ", o);
	text_put(o, mode, TEXT_XML);
	fputs("</text>\n<text x=\"600\" y=\"40\" text-anchor=\"middle\" fill=\"#67677a\">", o);
	put_count(o, agg_total(a));
	fprintf(o, " samples, %u Hz", m->hz);
	if (m->duration_ns)
		fprintf(o, ", %.2f s", (double)m->duration_ns / 1e9);
	fprintf(o, ", %u distinct stacks</text>\n", agg_nstacks(a));
}

static void write_frame(FILE *o, const struct agg *a, const struct flame_order *fo, const struct node *n,
			double x, double w, uint64_t total)
{
	char all[64], fill[8];
	const char *text = n->loc == ROOT ? "all" : fo->text[n->loc], *shown = text;
	double y = TOP + (double)n->depth * ROW;
	size_t room = (size_t)((w - 6) / CHAR_W);

	if (n->loc == ROOT) {   /* the root's bar tells the total, as the html page's does */
		snprintf(all, sizeof(all), "all (%llu samples)", (unsigned long long)n->total);
		shown = all;
	}
	colour_of(a, n->loc, fill);
	fputs("<g class=\"f\"><title>", o);
	text_put(o, text, TEXT_XML);
	fputs(" (", o);
	put_count(o, n->total);
	fprintf(o, " samples, %.2f%%)</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" "
		"fill=\"%s\" rx=\"2\"/>", 100.0 * (double)n->total / (double)total, x, y,
		w >= 2 ? w - 1 : w, ROW - 1, fill);
	if (w >= 6 + 3 * CHAR_W) {
		fprintf(o, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + 11.5);
		text_put_cut(o, shown, TEXT_XML, room);
		fputs("</text>", o);
	}
	fputs("</g>\n", o);
}

/* Pre-order: a node's x is its parent's plus the widths of its elder siblings. */
static int write_frames(FILE *o, const struct agg *a, const struct flame_order *fo, const struct tree *t)
{
	double *x = calloc(t->len, sizeof(*x)), *acc = calloc(t->len, sizeof(*acc));
	double scale = (double)(WIDTH - 2 * PAD) / (double)t->n[0].total;

	if (!x || !acc) {
		free(x);
		free(acc);
		return -PBP_E_NOMEM;
	}
	x[0] = PAD;
	write_frame(o, a, fo, &t->n[0], x[0], WIDTH - 2 * PAD, t->n[0].total);
	for (uint32_t i = 1; i < t->len; i++) {
		const struct node *n = &t->n[i];
		double w = (double)n->total * scale;

		x[i] = x[n->parent] + acc[n->parent];
		acc[n->parent] += w;
		if (w >= MIN_W)     /* children are never wider: they drop out too */
			write_frame(o, a, fo, n, x[i], w, t->n[0].total);
	}
	free(x);
	free(acc);
	return 0;
}

/* Status colours in use, with their share of the samples. */
static void write_legend(FILE *o, const struct agg *a, const struct tree *t, double y)
{
	uint64_t share[ST__COUNT] = { 0 };
	bool seen[ST__COUNT] = { false };
	double x = PAD;

	for (uint32_t i = 1; i < t->len; i++) {
		const char *name, *file;
		uint32_t kind, st;
		int line;

		agg_loc_info(a, t->n[i].loc, &name, &file, &line, &kind);
		if (kind == LOC_STATUS) {
			st = flame_status_of(name);
			seen[st] = true;
			share[st] += t->n[i].total;
		}
	}
	for (uint32_t s = 0; s < ST__COUNT; s++) {
		if (!seen[s])
			continue;
		fprintf(o, "<g class=\"legend\"><rect x=\"%.0f\" y=\"%.0f\" width=\"11\" height=\"11\" fill=\"%s\" "
			"stroke=\"#555\" stroke-width=\"0.5\"/><text x=\"%.0f\" y=\"%.0f\">%s %.1f%%</text></g>\n",
			x, y, status_info(s)->colour, x + 15, y + 9.5, status_label(s),
			100.0 * (double)share[s] / (double)t->n[0].total);
		x += 15 + CHAR_W * (double)(strlen(status_label(s)) + 8);
	}
}

static bool has_status(const struct agg *a)
{
	for (uint32_t i = 0; i < agg_nlocs(a); i++) {
		const char *name, *file;
		uint32_t kind;
		int line;

		agg_loc_info(a, i, &name, &file, &line, &kind);
		if (kind == LOC_STATUS)
			return true;
	}
	return false;
}

static int write_svg(FILE *o, const struct agg *a, const struct profile_meta *m,
		     const struct flame_order *fo, const struct tree *t)
{
	bool legend = has_status(a);
	uint32_t chart_end = TOP + (t->maxdepth + 1) * ROW;
	int err = 0;

	write_header(o, a, m, chart_end + (legend ? 30 : 10));
	if (t->n[0].total == 0)
		fputs("<text x=\"600\" y=\"66\" text-anchor=\"middle\">No samples.</text>\n", o);
	else if ((err = write_frames(o, a, fo, t)) == 0 && legend)
		write_legend(o, a, t, chart_end + 10);
	fputs("</svg>\n", o);
	return err;
}

int svg_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct flame_order fo;
	struct tree t = { 0 };
	int err = flame_order_build(a, &fo);

	if (!err)
		err = tree_build(a, &fo, &t);
	if (!err)
		err = write_svg(o, a, m, &fo, &t);
	free(t.n);
	flame_order_free(&fo);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
