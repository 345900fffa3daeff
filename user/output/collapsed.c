/* SPDX-License-Identifier: MIT */
/* Collapsed stacks, the input format of flamegraph.pl, speedscope and many others. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "core/text.h"
#include "output/writers.h"

int loc_format(const struct agg *a, uint32_t id, char *out, size_t len)
{
	const char *name, *file;
	uint32_t kind;
	int line;

	agg_loc_info(a, id, &name, &file, &line, &kind);
	if (kind != LOC_PY || (line < 0 && !file[0]))
		return snprintf(out, len, "%s", name);  /* a label, or a frame known by name only */
	if (line >= 0)
		return snprintf(out, len, "%s (%s:%d)", name, file, line);
	return snprintf(out, len, "%s (%s)", name, file);
}

/*
 * A location as one frame of a line: escaped like all text from the target
 * (no newline can end the record early), and no `;`, which separates frames.
 */
static char *frame_text(const struct agg *a, uint32_t id)
{
	int n = loc_format(a, id, NULL, 0);
	char *raw = n >= 0 ? malloc((size_t)n + 1) : NULL, *out = NULL;
	size_t len;

	if (!raw)
		return NULL;
	loc_format(a, id, raw, (size_t)n + 1);
	len = text_escape(NULL, 0, raw, TEXT_PLAIN) + 1;
	if ((out = malloc(len))) {
		text_escape(out, len, raw, TEXT_PLAIN);
		for (char *p = out; *p; p++)
			if (*p == ';')
				*p = ':';
	}
	free(raw);
	return out;
}

/*
 * The profile as its lines: a stack is a sequence of frame texts, counted
 * once per distinct sequence. Stacks the aggregate keeps apart by what the
 * text does not show (the thread or status of a sample when no label says
 * it) are one line, and so are locations that read the same; a line is the
 * texts joined by `;`, which no text holds, so equal sequences are equal
 * lines and the other way round. Another aggregate does the counting.
 */
int collapsed_lines(const struct agg *a, struct agg *lines)
{
	const struct stack_tags none = { 0 };
	uint32_t nlocs = agg_nlocs(a), cap = 0;
	uint32_t *text = malloc((nlocs ? nlocs : 1) * sizeof(*text)), *seq = NULL;
	int err = text ? 0 : -PBP_E_NOMEM;

	for (uint32_t id = 0; !err && id < nlocs; id++) {
		char *s = frame_text(a, id);
		int64_t t = s ? agg_loc(lines, s, NULL, -1, LOC_PY) : -PBP_E_NOMEM;

		free(s);
		err = t < 0 ? (int)t : 0;
		if (!err)
			text[id] = (uint32_t)t;
	}
	for (uint32_t i = 0; !err && i < agg_nstacks(a); i++) {
		uint64_t count;
		uint32_t n;
		const uint32_t *locs = agg_stack(a, i, &n, &count, NULL);

		if (n > cap) {
			uint32_t *p = realloc(seq, n * sizeof(*seq));

			if (!p) {
				err = -PBP_E_NOMEM;
				break;
			}
			seq = p, cap = n;
		}
		for (uint32_t j = 0; j < n; j++)
			seq[j] = text[locs[j]];
		err = agg_add(lines, &none, seq, n, count);
	}
	free(text);
	free(seq);
	return err;
}

int collapsed_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct agg *lines = agg_new();
	int err = lines ? collapsed_lines(a, lines) : -PBP_E_NOMEM;

	(void)m;
	for (uint32_t i = 0; !err && i < agg_nstacks(lines); i++) {
		uint64_t count;
		uint32_t n;
		const uint32_t *locs = agg_stack(lines, i, &n, &count, NULL);

		for (uint32_t j = 0; j < n; j++) {
			const char *name, *file;
			uint32_t kind;
			int line;

			agg_loc_info(lines, locs[j], &name, &file, &line, &kind);
			if (j)
				fputc(';', o);
			fputs(name, o);
		}
		fprintf(o, " %llu\n", (unsigned long long)count);
	}
	agg_free(lines);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
