/* SPDX-License-Identifier: MIT */
/*
 * Raw kernel samples to locations: code objects named through the cache,
 * lines from the line table, and stacks the kernel could not finish
 * completed from where it stopped.
 */
#include <stdlib.h>
#include <string.h>

#include "pyprof.h"

#define UNKNOWN_FRAME "[unknown]"

static int64_t frame_loc(struct pyproc *p, struct agg *a, const struct pbp_frame *f,
			 const struct pbp_frame *key, struct symstats *st)
{
	int err;
	const struct codeinfo *ci = codecache_get(p->codes, p, f->code, key, &err);

	st->frames++;
	if (!ci) {
		/* Freed or unreadable since the sample: say so rather than drop the frame. */
		st->unknown_frames++;
		return agg_loc(a, UNKNOWN_FRAME, NULL, -1, LOC_PY);
	}
	return agg_loc(a, ci->name, ci->file, frame_line(p, ci, f->instr), LOC_PY);
}

/* Frames the kernel did not copy, read now from where it stopped. */
static int complete(struct pyproc *p, const struct pbp_sample *s, struct pbp_frame *more,
		    size_t max, size_t *n)
{
	uint64_t frame = s->resume;
	int err = 0;

	*n = 0;
	if (!frame && s->nframes == 0 && s->tstate)
		err = pythread_frame(p, s->tstate, &frame);
	if (!err && frame)
		err = stack_walk(p, frame, more, max, n);
	return err;
}

int symbolize(struct pyproc *p, const struct pbp_sample *s, struct agg *a, uint32_t *locs,
	      uint32_t max, uint32_t *n, struct symstats *st)
{
	struct pbp_frame *more = NULL;
	size_t nmore = 0;
	uint32_t k = 0;
	int err = 0;

	*n = 0;
	st->samples++;
	if (s->flags & (PBP_F_TRUNCATED | PBP_F_FAULT | PBP_F_NO_TSTATE)) {
		more = malloc(sizeof(*more) * PBP_MAX_DEPTH);
		if (!more)
			return -PBP_E_NOMEM;
		err = complete(p, s, more, PBP_MAX_DEPTH, &nmore);
		if (err)
			st->failed++;
		else
			st->completed++;
	}
	/* Innermost first in the sample; the profile wants the root first. */
	for (size_t i = nmore; i-- > 0 && k < max;) {
		int64_t id = frame_loc(p, a, &more[i], NULL, st);

		if (id < 0)
			goto out;
		locs[k++] = (uint32_t)id;
	}
	for (int i = (int)s->nframes - 1; i >= 0 && k < max; i--) {
		int64_t id = frame_loc(p, a, &s->frames[i], &s->frames[i], st);

		if (id < 0)
			goto out;
		locs[k++] = (uint32_t)id;
	}
	if (k == 0)
		st->no_python++;
out:
	free(more);
	*n = k;
	return k ? 0 : err;
}

int symbolize_thread(struct pyproc *p, uint64_t tstate, struct agg *a, uint32_t *locs,
		     uint32_t max, uint32_t *n, struct symstats *st)
{
	struct pbp_frame *frames = malloc(sizeof(*frames) * PBP_MAX_DEPTH);
	uint64_t frame = 0;
	size_t nf = 0;
	uint32_t k = 0;
	int err;

	*n = 0;
	if (!frames)
		return -PBP_E_NOMEM;
	err = pythread_frame(p, tstate, &frame);
	if (!err && frame)
		err = stack_walk(p, frame, frames, PBP_MAX_DEPTH, &nf);
	for (size_t i = nf; !err && i-- > 0 && k < max;) {
		int64_t id = frame_loc(p, a, &frames[i], NULL, st);

		if (id < 0)
			err = (int)id;
		else
			locs[k++] = (uint32_t)id;
	}
	free(frames);
	*n = k;
	return err;
}
