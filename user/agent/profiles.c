/* SPDX-License-Identifier: MIT */
/*
 * A profile out of the history: merge the slices, write pprof into memory.
 * The pull endpoint and the pusher both come here, so a service's profile is
 * the same whichever way it leaves the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "agent/profiles.h"
#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "core/stagecpu.h"
#include "output/writers.h"

static bool keep(const struct proc_meta *m, uint32_t pid, void *ctx)
{
	const struct profile_filter *f = ctx;

	if (f->pid && (pid_t)pid != f->pid)
		return false;
	return !f->service || (m && strcmp(m->label[PL_SERVICE], f->service) == 0);
}

int profile_build(struct history *h, uint64_t since, uint64_t until, const struct profile_filter *f,
		  const struct profile_kind *k, char **body, size_t *len, struct span *got)
{
	struct agg *a = agg_new();
	struct profile_meta m = { .mode = k->mode, .hz = k->hz, .series_labels = k->series_labels };
	FILE *o = NULL;
	int err = a ? 0 : -PBP_E_NOMEM;

	*body = NULL;
	*len = 0;
	stagecpu_enter(STAGE_SLICES);
	if (!err)
		err = history_merge(h, a, since, until, keep, (void *)f, got);
	stagecpu_leave();
	m.start_unix_ns = got->start_ns;
	m.duration_ns = got->end_ns - got->start_ns;
	if (!err && !(o = open_memstream(body, len)))
		err = -PBP_E_NOMEM;
	stagecpu_enter(STAGE_PPROF);        /* gzip, inside it, counts apart */
	if (!err && pprof_write(a, &m, o))
		err = -PBP_E_NOMEM;
	stagecpu_leave();
	if (o && fclose(o) && !err)
		err = -PBP_E_NOMEM;
	if (err) {
		free(*body);
		*body = NULL;
		*len = 0;
	}
	agg_free(a);
	return err;
}
