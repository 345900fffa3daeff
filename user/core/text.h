/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_TEXT_H
#define PBP_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A code point (< 0x110000) as UTF-8 into b: its length, 1 to 4. */
size_t utf8_encode(uint32_t cp, char b[4]);
/* Bytes of the valid UTF-8 sequence at s (1-4), 0 if invalid. For writers whose format wants UTF-8. */
size_t utf8_seq_len(const unsigned char *s);
/* Make s valid UTF-8 in place: each invalid sequence (a lone surrogate, a cut character) becomes '?'. */
void utf8_scrub(char *s);

/*
 * How text from the target (names, files, command lines) is written: never
 * a control character (C0, DEL, C1) as such, nor in plain text and JSON a
 * bidi embedding, override or isolate; always valid UTF-8.
 */
enum text_esc {
	TEXT_PLAIN,             /* terminal, collapsed stacks: \n \t \r, else \xNN (invalid bytes too) */
	TEXT_JSON,              /* inside a JSON string: controls as \u00NN, invalid bytes U+FFFD */
	TEXT_HTML_JSON,         /* the same inside an HTML <script>: < > & U+2028/9 as \uNNNN too */
	TEXT_XML,               /* XML text or attribute value */
};

void text_put(FILE *o, const char *s, enum text_esc how);
/* A JSON string value: s escaped (TEXT_JSON or TEXT_HTML_JSON) between double quotes. */
void text_put_quoted(FILE *o, const char *s, enum text_esc how);
/* At most max_chars characters (code points; a cut text ends in "…"; 0: no limit). */
void text_put_cut(FILE *o, const char *s, enum text_esc how, size_t max_chars);
/* Into out (NUL-terminated, cut before a character or escape that does not fit); like snprintf, the length it needs. */
size_t text_escape(char *out, size_t len, const char *s, enum text_esc how);
/* Characters (code points) in s, counting each invalid byte as one. */
size_t text_len(const char *s);

#endif /* PBP_CORE_TEXT_H */
