/* SPDX-License-Identifier: MIT */
/* A pprof profile read back into an aggregate; see pprofread.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "read/pprofread.h"
#include "aggregate/aggnat.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "core/limits.h"
#include "proto/profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;

struct reader {
	struct agg *a;
	const Profile *p;
	const Location **locs;  /* by id, for bsearch */
	const Function **funcs;
	uint32_t *frames;       /* one stack, root first */
	size_t value;           /* which of a sample's values is its count */
	const char *why;
};

static int cmp_loc(const void *x, const void *y)
{
	uint64_t a = (*(const Location *const *)x)->id, b = (*(const Location *const *)y)->id;

	return (a > b) - (a < b);
}

static int cmp_func(const void *x, const void *y)
{
	uint64_t a = (*(const Function *const *)x)->id, b = (*(const Function *const *)y)->id;

	return (a > b) - (a < b);
}

/* A string table entry, or NULL for an index out of it. */
static const char *str(const struct reader *r, int64_t i)
{
	return i >= 0 && (size_t)i < r->p->n_string_table ? r->p->string_table[i] : NULL;
}

static const Location *find_loc(const struct reader *r, uint64_t id)
{
	Location key = { .id = id }, *kp = &key;
	const Location **hit = bsearch(&kp, r->locs, r->p->n_location, sizeof(*r->locs), cmp_loc);

	return hit ? *hit : NULL;
}

static const Function *find_func(const struct reader *r, uint64_t id)
{
	Function key = { .id = id }, *kp = &key;
	const Function **hit = bsearch(&kp, r->funcs, r->p->n_function, sizeof(*r->funcs), cmp_func);

	return hit ? *hit : NULL;
}

/* One Line as a location of a (file "" and line 0 are pprof's "unknown"). */
static int64_t line_loc(struct reader *r, const Perftools__Profiles__Line *l)
{
	const Function *f = find_func(r, l->function_id);
	const char *name = f ? str(r, f->name) : NULL, *file = f ? str(r, f->filename) : NULL;

	if (!name || !file) {
		r->why = "a line names no function, or a string past the string table";
		return -PBP_E_INVAL;
	}
	return agg_loc(r->a, name[0] ? name : "?", file[0] ? file : NULL,
		       l->line > 0 && l->line < (1L << 30) ? (int)l->line : -1, LOC_PY);
}

static const Perftools__Profiles__Mapping *find_mapping(struct reader *r, uint64_t id)
{
	for (size_t i = 0; i < r->p->n_mapping; i++)
		if (r->p->mapping[i]->id == id)
			return r->p->mapping[i];
	return NULL;
}

/*
 * A native location's mapping and address, kept for a pprof written again
 * (convert to .pb.gz). Looked for once per location; a mapping that is not
 * there, or names strings past the table, is left out: it names nothing.
 */
static int keep_mapping(struct reader *r, const Location *l, uint32_t loc)
{
	const Perftools__Profiles__Mapping *m;
	struct agg_mapping am = { 0 };
	const char *path, *bid;
	struct aggnat *n;
	uint32_t had;
	uint64_t addr;

	if (!l->mapping_id || l->n_line != 1 || aggnat_get(agg_nat_of(r->a), loc, &had, &addr))
		return 0;
	if (!(m = find_mapping(r, l->mapping_id)) || !(path = str(r, m->filename)) || !(bid = str(r, m->build_id)))
		return 0;
	am.path = path;
	snprintf(am.build_id, sizeof(am.build_id), "%s", bid);
	am.start = m->memory_start, am.limit = m->memory_limit, am.offset = m->file_offset;
	return (n = agg_nat(r->a)) && aggnat_set(n, loc, &am, l->address) == 0 ? 0 : -PBP_E_NOMEM;
}

/* Tags and thread name from pybpfprof's labels; others are left alone. */
static int sample_tags(struct reader *r, const Sample *s, struct stack_tags *t)
{
	const char *thread = NULL;

	for (size_t i = 0; i < s->n_label; i++) {
		const char *key = str(r, s->label[i]->key), *val = str(r, s->label[i]->str);

		if (!key)
			continue;
		if (!strcmp(key, "thread_id"))
			t->tid = (uint32_t)s->label[i]->num;
		else if (!strcmp(key, "pid"))
			t->pid = (uint32_t)s->label[i]->num;
		else if (!strcmp(key, "thread_name"))
			thread = val;
		else if (!strcmp(key, "status") && val)
			for (uint32_t st = 0; st < ST__COUNT; st++)
				if (!strcmp(status_info(st)->name, val))
					t->status = st;
	}
	if (thread && thread[0] && !agg_thread_name(r->a, t->pid, t->tid))
		return agg_set_thread_name(r->a, t->pid, t->tid, thread) ? -PBP_E_NOMEM : 0;
	return 0;
}

static int read_sample(struct reader *r, const Sample *s)
{
	struct stack_tags t = { .status = ST_UNKNOWN };
	uint32_t n = 0;
	int err;

	if (r->value >= s->n_value || s->value[r->value] < 0) {
		r->why = "a sample has no count, or a negative one";
		return -PBP_E_INVAL;
	}
	if (s->value[r->value] == 0)
		return 0;
	for (size_t i = s->n_location_id; i-- > 0;) {
		const Location *l = find_loc(r, s->location_id[i]);

		if (!l) {
			r->why = "a sample names a location the profile does not have";
			return -PBP_E_INVAL;
		}
		for (size_t j = l->n_line; j-- > 0 && n < PBP_MAX_LOCS;) {
			int64_t id = line_loc(r, l->line[j]);

			if (id < 0)
				return (int)id;
			if ((err = keep_mapping(r, l, (uint32_t)id)) != 0)
				return err;
			r->frames[n++] = (uint32_t)id;
		}
	}
	if (!n)
		return 0;       /* no code to show: a sample of nothing we can draw */
	if ((err = sample_tags(r, s, &t)) != 0)
		return err;
	return agg_add(r->a, &t, r->frames, n, (uint64_t)s->value[r->value]);
}

/* Which value is the sample count: the "samples" type, else the first. */
static size_t count_value(const Profile *p)
{
	for (size_t i = 0; i < p->n_sample_type; i++) {
		int64_t k = p->sample_type[i]->type;

		if (k >= 0 && (size_t)k < p->n_string_table && !strcmp(p->string_table[k], "samples"))
			return i;
	}
	return 0;
}

static int read_profile(struct reader *r)
{
	const Profile *p = r->p;
	int err = 0;

	r->locs = malloc((p->n_location + 1) * sizeof(*r->locs));
	r->funcs = malloc((p->n_function + 1) * sizeof(*r->funcs));
	r->frames = malloc(PBP_MAX_LOCS * sizeof(*r->frames));
	if (!r->locs || !r->funcs || !r->frames)
		return -PBP_E_NOMEM;
	memcpy(r->locs, p->location, p->n_location * sizeof(*r->locs));
	memcpy(r->funcs, p->function, p->n_function * sizeof(*r->funcs));
	qsort(r->locs, p->n_location, sizeof(*r->locs), cmp_loc);
	qsort(r->funcs, p->n_function, sizeof(*r->funcs), cmp_func);
	r->value = count_value(p);
	for (size_t i = 0; !err && i < p->n_sample; i++)
		err = read_sample(r, p->sample[i]);
	return err;
}

int pprof_read(struct agg *a, const uint8_t *buf, size_t len, const char **why)
{
	Profile *p = perftools__profiles__profile__unpack(NULL, len, buf);
	struct reader r = { .a = a, .p = p };
	int err = -PBP_E_INVAL;

	r.why = "it is not a pprof profile (profile.proto), or one cut short or damaged";
	/* The format's one fixed point: string 0 is "". Text that happens to decode has none. */
	if (p && p->n_string_table > 0 && p->string_table[0][0] == '\0' && p->n_sample_type > 0)
		err = read_profile(&r);
	*why = r.why;
	free(r.locs);
	free(r.funcs);
	free(r.frames);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	return err;
}
