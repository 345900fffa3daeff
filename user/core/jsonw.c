/* SPDX-License-Identifier: MIT */
/*
 * A JSON writer for small documents written straight to a stream, such as
 * the end-of-run figures (`record --stats=json`): one line, keys in the
 * order the caller writes them. Strings go through text.c's JSON escaping,
 * so a name the target chose cannot break the line or the document.
 */
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/jsonw.h"
#include "core/text.h"

/* A comma before every member but the first of its object or array. */
static void member(struct jsonw *w, const char *key)
{
	if (w->more)
		fputc(',', w->o);
	w->more = true;
	if (key) {
		text_put_quoted(w->o, key, TEXT_JSON);
		fputc(':', w->o);
	}
}

static void open_with(struct jsonw *w, const char *key, char c)
{
	member(w, key);
	fputc(c, w->o);
	w->more = false;
}

void jw_begin(struct jsonw *w, FILE *o)
{
	w->o = o;
	w->more = false;
	fputc('{', o);
}

void jw_finish(struct jsonw *w)
{
	fputs("}\n", w->o);
}

void jw_obj(struct jsonw *w, const char *key)
{
	open_with(w, key, '{');
}

void jw_arr(struct jsonw *w, const char *key)
{
	open_with(w, key, '[');
}

void jw_end_obj(struct jsonw *w)
{
	fputc('}', w->o);
	w->more = true;
}

void jw_end_arr(struct jsonw *w)
{
	fputc(']', w->o);
	w->more = true;
}

void jw_u64(struct jsonw *w, const char *key, uint64_t v)
{
	member(w, key);
	fprintf(w->o, "%llu", (unsigned long long)v);
}

void jw_bool(struct jsonw *w, const char *key, bool v)
{
	member(w, key);
	fputs(v ? "true" : "false", w->o);
}

void jw_int(struct jsonw *w, const char *key, long long v)
{
	member(w, key);
	fprintf(w->o, "%lld", v);
}

/* JSON has no NaN or infinity: a figure that is not a number is null. */
void jw_num(struct jsonw *w, const char *key, double v)
{
	member(w, key);
	if (isfinite(v))
		fprintf(w->o, "%.9g", v);
	else
		fputs("null", w->o);
}

void jw_str(struct jsonw *w, const char *key, const char *s)
{
	member(w, key);
	if (!s) {
		fputs("null", w->o);
		return;
	}
	text_put_quoted(w->o, s, TEXT_JSON);
}
