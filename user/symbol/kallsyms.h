/* SPDX-License-Identifier: MIT */
/*
 * --kernel: the kernel's function names by address, from /proc/kallsyms,
 * read once into a table sorted by address (binary search).
 */
#ifndef PBP_SYMBOL_KALLSYMS_H
#define PBP_SYMBOL_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ksym {
	uint64_t addr;
	uint32_t name;          /* offsets into the table's names */
	uint32_t mod;           /* its module's name ("nf_tables"), 0 for the kernel's own: "" */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t len, names_cap;
	/*
	 * Symbols listed at address 0: kptr_restrict hides the addresses from
	 * this reader. When every one is, the table is empty and zeroed set.
	 */
	size_t zero;
	bool zeroed;
	size_t malformed;       /* lines that were not "ADDR TYPE NAME [MODULE]" */
};

/*
 * The text symbols (types t, T, w, W) of f, in the format of /proc/kallsyms.
 * 0 or -PBP_E_NOMEM; a malformed line is counted and passed over.
 */
int kallsyms_parse(struct kallsyms *k, FILE *f);
/* The same from path: -PBP_E_IO when it cannot be opened. */
int kallsyms_load(struct kallsyms *k, const char *path);
/*
 * The function addr is in: the nearest symbol at or before it (kallsyms has
 * no sizes). NULL below the first symbol, or with an empty table. *mod is
 * its module's name, "" for the kernel's own.
 */
const char *kallsyms_name(const struct kallsyms *k, uint64_t addr, const char **mod);
void kallsyms_free(struct kallsyms *k);

#endif /* PBP_SYMBOL_KALLSYMS_H */
