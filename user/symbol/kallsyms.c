/* SPDX-License-Identifier: MIT */
/* The kernel's function names by address (kallsyms.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/kallsyms.h"
#include "core/errors.h"
#include "core/search.h"

/* A copy of s in the table's names; its offset, or -1 when out of memory. */
static int64_t keep_name(struct kallsyms *k, const char *s)
{
	size_t l = strlen(s) + 1, at = k->len;

	if (k->len + l > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap * 2 : 1 << 16;
		char *p;

		while (cap < k->len + l)
			cap *= 2;
		if (cap > UINT32_MAX || !(p = realloc(k->names, cap)))
			return -1;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + at, s, l);
	k->len += l;
	return (int64_t)at;
}

static int add_sym(struct kallsyms *k, uint64_t addr, const char *name, const char *mod)
{
	int64_t n, m = 0;

	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 4096;
		struct ksym *p = realloc(k->syms, cap * sizeof(*p));

		if (!p)
			return -PBP_E_NOMEM;
		k->syms = p;
		k->cap = cap;
	}
	/* The kernel's own symbols share offset 0, the empty name kept first. */
	if ((n = keep_name(k, name)) < 0 || (mod[0] && (m = keep_name(k, mod)) < 0))
		return -PBP_E_NOMEM;
	k->syms[k->n++] = (struct ksym){ addr, (uint32_t)n, (uint32_t)m };
	return 0;
}

/* The next field of *p, ended by blanks: NUL-terminated in place; NULL when none. */
static char *field(char **p)
{
	char *s = *p + strspn(*p, " \t\n"), *e = s + strcspn(s, " \t\n");

	if (e == s)
		return NULL;
	*p = *e ? e + 1 : e;
	*e = '\0';
	return s;
}

/*
 * One line: "ffffffff81000000 T _stext" or "ffffffffc0a01000 t nft_do_chain\t[nf_tables]".
 * By hand, not sscanf: the kernel lists some 120,000, read before sampling.
 */
static int parse_line(struct kallsyms *k, char *line)
{
	char *p = line, *a = field(&p), *type = field(&p), *name = field(&p), *mod = field(&p), *end;
	uint64_t addr = a ? strtoull(a, &end, 16) : 0;
	size_t ml = 0;

	if (!name || *end || type[1] || (mod && ((ml = strlen(mod)) < 3 || mod[0] != '[' ||
						  mod[ml - 1] != ']'))) {
		k->malformed++;
		return 0;
	}
	if (!strchr("tTwW", type[0]))
		return 0;
	if (addr == 0) {
		k->zero++;
		return 0;
	}
	if (mod) {
		mod[ml - 1] = '\0';
		mod++;
	}
	return add_sym(k, addr, name, mod ? mod : "");
}

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Aliases: the first listed last, so that the search (the last at or before) finds it. */
	return x->name > y->name ? -1 : x->name < y->name;
}

int kallsyms_parse(struct kallsyms *k, FILE *f)
{
	char line[512];
	int err = 0;

	memset(k, 0, sizeof(*k));
	if (keep_name(k, "") < 0)
		return -PBP_E_NOMEM;
	while (!err && fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);

		if (l && line[l - 1] != '\n' && !feof(f)) {    /* overlong: pass over its rest */
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			k->malformed++;
			continue;
		}
		err = parse_line(k, line);
	}
	if (err) {
		kallsyms_free(k);
		return err;
	}
	if (k->syms)
		qsort(k->syms, k->n, sizeof(*k->syms), by_addr);
	k->zeroed = k->n == 0 && k->zero > 0;
	return 0;
}

int kallsyms_load(struct kallsyms *k, const char *path)
{
	FILE *f = fopen(path, "re");
	int err;

	memset(k, 0, sizeof(*k));
	if (!f)
		return -PBP_E_IO;
	err = kallsyms_parse(k, f);
	fclose(f);
	return err;
}

static bool sym_starts_by(const void *elem, const void *addr)
{
	return ((const struct ksym *)elem)->addr <= *(const uint64_t *)addr;
}

const char *kallsyms_name(const struct kallsyms *k, uint64_t addr, const char **mod)
{
	/* The last symbol at or before addr: lo is the count of those. */
	size_t lo = search_first(k->syms, k->n, sizeof(*k->syms), &addr, sym_starts_by);

	if (lo == 0)
		return NULL;
	*mod = k->names + k->syms[lo - 1].mod;
	return k->names + k->syms[lo - 1].name;
}

void kallsyms_free(struct kallsyms *k)
{
	free(k->syms);
	free(k->names);
	memset(k, 0, sizeof(*k));
}
