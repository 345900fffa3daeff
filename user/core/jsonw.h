/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_JSONW_H
#define PBP_CORE_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One JSON object written member by member to a stream; key is NULL for a
 * member of an array. jw_finish ends the object and the line.
 */
struct jsonw {
	FILE *o;
	bool more;              /* the open object or array has a member: a comma first */
};

void jw_begin(struct jsonw *w, FILE *o);
void jw_finish(struct jsonw *w);
void jw_obj(struct jsonw *w, const char *key);
void jw_end_obj(struct jsonw *w);
void jw_arr(struct jsonw *w, const char *key);
void jw_end_arr(struct jsonw *w);
void jw_u64(struct jsonw *w, const char *key, uint64_t v);
void jw_int(struct jsonw *w, const char *key, long long v);
void jw_bool(struct jsonw *w, const char *key, bool v);
/* A number; null when not finite. */
void jw_num(struct jsonw *w, const char *key, double v);
/* A string escaped for JSON (text.c); null for NULL. */
void jw_str(struct jsonw *w, const char *key, const char *s);

#endif /* PBP_CORE_JSONW_H */
