/* SPDX-License-Identifier: MIT */
/* The root labels' text, written and read back (rootlabel.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/rootlabel.h"

#define NS_NOTE " in its namespace)"

void root_label(char *out, size_t len, const char *word, uint32_t id, uint32_t ns, const char *rest)
{
	char note[48] = "";

	if (ns)
		snprintf(note, sizeof(note), " (%u" NS_NOTE, ns);
	snprintf(out, len, "%s %u%s%s%s", word, id, note, rest ? " " : "", rest ? rest : "");
}

/* A decimal id that fits 32 bits at s; the character after it, or NULL. */
static const char *parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x;

	if (*s < '0' || *s > '9')
		return NULL;
	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || x > UINT32_MAX)
		return NULL;
	*v = (uint32_t)x;
	return end;
}

bool root_label_parse(const char *label, const char *word, uint32_t *id, uint32_t *ns, const char **rest)
{
	size_t wl = strlen(word);
	const char *p;

	*ns = 0;
	*rest = NULL;
	if (strncmp(label, word, wl) != 0 || label[wl] != ' ' || !(p = parse_u32(label + wl + 1, id)))
		return false;
	if (strncmp(p, " (", 2) == 0) {
		uint32_t v;
		const char *q = parse_u32(p + 2, &v);

		if (q && strncmp(q, NS_NOTE, strlen(NS_NOTE)) == 0) {
			*ns = v;
			p = q + strlen(NS_NOTE);
		}
	}
	if (*p == ' ')
		*rest = p + 1;
	return *p == ' ' || !*p;
}
