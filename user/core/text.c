/* SPDX-License-Identifier: MIT */
/*
 * Text that comes from the target, printed safely: function, file and
 * thread names, command lines. A target chooses them, so they may hold any
 * character, and bytes that are not UTF-8 at all: every writer goes through
 * here, so that no control character reaches a terminal (an ESC starts an
 * escape sequence, a C1 CSI too on many terminals, a newline breaks a line
 * that a reader takes for a record) and every file is valid UTF-8.
 *
 * One decoder: a byte that does not start a valid sequence decodes as a
 * lone surrogate, U+DC80..U+DCFF (as Python's surrogateescape does), which
 * valid UTF-8 cannot hold; each context says what to make of it.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "core/text.h"

#define REPLACEMENT 0xfffd
#define BAD_BYTE 0xdc00u    /* | the byte: an invalid byte, decoded */

/*
 * The character at s (NUL-terminated): the bytes it takes (1-4). An
 * invalid byte takes 1 and decodes as U+DC00 | byte, a lone surrogate.
 */
static size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
	static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		 : s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : 0;
	uint32_t v;

	*cp = BAD_BYTE | s[0];
	if (n == 1)
		*cp = s[0];
	if (n <= 1)
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

size_t utf8_seq_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n = utf8_decode(s, &cp);

	return cp >= 0xd800 && cp < 0xe000 ? 0 : n;
}

void utf8_scrub(char *str)
{
	unsigned char *s = (unsigned char *)str, *w = s;

	while (*s) {
		size_t n = utf8_seq_len(s);

		if (n) {
			memmove(w, s, n);
			w += n, s += n;
			continue;
		}
		/* One '?' for a lead byte and its continuation bytes (a surrogate, a cut character). */
		n = 1;
		if (s[0] >= 0xc0 && s[0] <= 0xf7) {
			size_t want = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;

			while (n < want && (s[n] & 0xc0) == 0x80)
				n++;
		}
		*w++ = '?';
		s += n;
	}
	*w = '\0';
}

/* ------------------------------------------------------------ output */

/* Where escaped text goes: a stream, or a buffer that counts what did not fit. */
struct sink {
	FILE *f;
	char *buf;
	size_t len, used;       /* buffer: its size, bytes written to it */
	size_t need;            /* bytes the whole text takes */
};

/* Whole pieces only: a cut text ends before a character or an escape, not inside one. */
static void put_bytes(struct sink *k, const char *s, size_t n)
{
	if (k->f)
		fwrite(s, 1, n, k->f);
	else if (k->used == k->need && k->used + n < k->len)
		memcpy(k->buf + k->used, s, n), k->used += n;
	k->need += n;
}

static void put_fmt(struct sink *k, const char *fmt, unsigned v)
{
	char b[16];
	int n = snprintf(b, sizeof(b), fmt, v);

	put_bytes(k, b, (size_t)n);
}

size_t utf8_encode(uint32_t cp, char b[4])
{
	if (cp < 0x80) {
		b[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	b[2] = (char)(0x80 | (cp >> 6 & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static void put_utf8(struct sink *k, uint32_t cp)
{
	char b[4];

	put_bytes(k, b, utf8_encode(cp, b));
}

/* C0, DEL and C1: what terminals act on rather than show. */
static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
}

/*
 * The bidirectional embeddings, overrides and isolates (U+202A-U+202E,
 * U+2066-U+2069): a terminal shows them by reordering what follows, so a
 * name holding one can make the line read as something else.
 */
static bool is_bidi(uint32_t cp)
{
	return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static bool is_bad_byte(uint32_t cp)
{
	return cp >= (BAD_BYTE | 0x80) && cp <= (BAD_BYTE | 0xff);
}

/* Plain text: \n \t \r, other controls and invalid bytes as \xNN, bidi controls as \uNNNN. */
static void put_text_cp(struct sink *k, uint32_t cp)
{
	if (cp == '\n')
		put_bytes(k, "\\n", 2);
	else if (cp == '\t')
		put_bytes(k, "\\t", 2);
	else if (cp == '\r')
		put_bytes(k, "\\r", 2);
	else if (is_control(cp) || is_bad_byte(cp))
		put_fmt(k, "\\x%02x", cp & 0xff);
	else if (is_bidi(cp))
		put_fmt(k, "\\u%04x", cp);
	else
		put_utf8(k, cp);
}

/*
 * JSON: the characters themselves, escaped as JSON wants, and DEL and C1 too
 * so that no control byte is in the file, and the bidi controls (dump --json
 * is read on terminals too); an invalid byte is U+FFFD. Inside
 * an HTML <script> also '<' '>' '&', so that no "</script>" or "<!--" can
 * appear in the page's source, and U+2028/9, which older JavaScript parsers
 * take for line ends.
 */
static void put_json_cp(struct sink *k, uint32_t cp, bool html)
{
	if (is_bad_byte(cp))
		cp = REPLACEMENT;
	if (cp == '"' || cp == '\\')
		put_fmt(k, "\\%c", cp);
	else if (is_control(cp) || is_bidi(cp) ||
		 (html && (cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 || cp == 0x2029)))
		put_fmt(k, "\\u%04x", cp);
	else
		put_utf8(k, cp);
}

/*
 * XML 1.0 allows no C0 control but tab and line ends, and no U+FFFE/F; DEL
 * and C1 it allows, as character references here so the file holds no
 * control byte.
 */
static void put_xml_cp(struct sink *k, uint32_t cp)
{
	switch (cp) {
	case '&': put_bytes(k, "&amp;", 5); return;
	case '<': put_bytes(k, "&lt;", 4); return;
	case '>': put_bytes(k, "&gt;", 4); return;
	case '"': put_bytes(k, "&quot;", 6); return;
	case '\'': put_bytes(k, "&#39;", 5); return;
	}
	if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xfffe || cp == 0xffff ||
	    is_bad_byte(cp))
		cp = REPLACEMENT;
	if (cp >= 0x7f && cp < 0xa0)
		put_fmt(k, "&#x%x;", cp);
	else
		put_utf8(k, cp);
}

static void put_cp(struct sink *k, uint32_t cp, enum text_esc how)
{
	switch (how) {
	case TEXT_PLAIN: put_text_cp(k, cp); return;
	case TEXT_JSON: put_json_cp(k, cp, false); return;
	case TEXT_HTML_JSON: put_json_cp(k, cp, true); return;
	case TEXT_XML: put_xml_cp(k, cp); return;
	}
}

static void put_str(struct sink *k, const char *s, enum text_esc how, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t keep = max_chars && text_len(s) > max_chars ? max_chars - 1 : (size_t)-1;
	uint32_t cp;

	for (size_t n = 0; *p && n < keep; n++) {
		p += utf8_decode(p, &cp);
		put_cp(k, cp, how);
	}
	if (*p)
		put_cp(k, 0x2026, how);     /* "…": the text was cut */
}

size_t text_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	uint32_t cp;

	while (*p) {
		p += utf8_decode(p, &cp);
		n++;
	}
	return n;
}

void text_put_cut(FILE *o, const char *s, enum text_esc how, size_t max_chars)
{
	struct sink k = { .f = o };

	put_str(&k, s, how, max_chars);
}

void text_put(FILE *o, const char *s, enum text_esc how)
{
	text_put_cut(o, s, how, 0);
}

void text_put_quoted(FILE *o, const char *s, enum text_esc how)
{
	fputc('"', o);
	text_put_cut(o, s, how, 0);
	fputc('"', o);
}

size_t text_escape(char *out, size_t len, const char *s, enum text_esc how)
{
	struct sink k = { .buf = out, .len = len };

	put_str(&k, s, how, 0);
	if (len)
		out[k.used] = '\0';
	return k.need;
}
