/* SPDX-License-Identifier: MIT */
/* Collapsed stacks, the input format of flamegraph.pl, speedscope and many others. */
#include <string.h>

#include "pyprof.h"

void loc_format(const struct agg *a, uint32_t id, char *out, size_t len)
{
	const char *name, *file;
	uint32_t kind;
	int line;

	agg_loc_info(a, id, &name, &file, &line, &kind);
	if (kind != LOC_PY)
		snprintf(out, len, "%s", name);
	else if (line >= 0)
		snprintf(out, len, "%s (%s:%d)", name, file, line);
	else
		snprintf(out, len, "%s (%s)", name, file);
}

/* `;` separates frames and a newline ends the record: neither may appear inside one. */
static void put_frame(FILE *o, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s, o);
}

int collapsed_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	char buf[2048];

	(void)m;
	for (uint32_t i = 0; i < agg_nstacks(a); i++) {
		uint64_t count;
		uint32_t n;
		const uint32_t *locs = agg_stack(a, i, &n, &count, NULL);

		for (uint32_t j = 0; j < n; j++) {
			if (j)
				fputc(';', o);
			loc_format(a, locs[j], buf, sizeof(buf));
			put_frame(o, buf);
		}
		fprintf(o, " %llu\n", (unsigned long long)count);
	}
	return ferror(o) ? -1 : 0;
}
