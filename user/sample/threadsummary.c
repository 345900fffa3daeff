// SPDX-License-Identifier: MIT
/*
 * The end-of-run lines of a target: its GIL figures and each thread's
 * samples by status (--threads' summary, and the summary of a few targets).
 */
#include <stdio.h>

#include "sample/target.h"
#include "sample/threadtable.h"
#include "aggregate/status.h"
#include "core/text.h"
#include "cpython/process.h"

void target_print_threads(const struct collector *c, const struct target *t, FILE *o)
{
	(void)c;
	fprintf(o, "pybpfprof: pid %d", (int)t->pid);
	if (t->p && t->p->tids)
		fprintf(o, " (%d in its namespace)", (int)t->p->ns_pid);
	fprintf(o, " (Python %s)", t->p ? t->p->version : "?");
	/* No GIL read (a free-threaded build has none to read): no figures, not zeros. */
	if (t->gil_ticks && t->gil_addr)
		fprintf(o, ": GIL held %.1f%%, contended %.1f%% of %llu ticks",
			100.0 * (double)t->gil_held / (double)t->gil_ticks,
			100.0 * (double)t->gil_contended / (double)t->gil_ticks,
			(unsigned long long)t->gil_ticks);
	fputc('\n', o);
	for (uint32_t i = 0; i < t->tc_cap; i++) {
		const struct tcache *e = &t->tc[i];
		char name[4 * sizeof(e->name)];     /* every byte an escape at worst */
		uint64_t total = 0;

		if (!e->tid)
			continue;
		for (int s = 0; s < ST__COUNT; s++)
			total += e->status[s];
		if (!total)
			continue;
		text_escape(name, sizeof(name), e->name, TEXT_PLAIN);
		fprintf(o, "  thread %-7d ", (int)e->tid);
		if (e->ns_tid)
			fprintf(o, "(%d in its namespace) ", (int)e->ns_tid);
		fprintf(o, "%-16s %7llu samples:", name, (unsigned long long)total);
		for (int s = 0; s < ST__COUNT; s++)
			if (e->status[s])
				fprintf(o, " %s %.1f%%", status_label((uint32_t)s),
					100.0 * (double)e->status[s] / (double)total);
		fputc('\n', o);
	}
}
