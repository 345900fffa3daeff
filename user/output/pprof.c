/* SPDX-License-Identifier: MIT */
/*
 * pprof's profile format: a gzipped perftools.profiles.Profile protobuf
 * (proto/profile.proto), as `go tool pprof` and most profile viewers read it.
 *
 * Functions are (name, file) pairs (see top.c), locations are Python
 * (function, line) locations with one Line each. A native location also
 * has its mapping (the library's path, build-id, addresses and file
 * offset) and an address in it, the first sampled there (aggnat.h), so
 * that pprof can name it again from the library or its debug file. The label frames of a stack
 * are not code, so they become sample labels instead of locations:
 * thread_id, thread_name, status, and pid/process when a process label is
 * there (with python_version, container_id and pod_uid when known); pprof
 * can then filter and group by them (-tagfocus, -tagroot).
 * Two sample values: the sample count and the time it stands for.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/aggnat.h"
#include "core/errors.h"
#include "core/stagecpu.h"
#include "aggregate/status.h"
#include "output/topview.h"
#include "output/writers.h"
#include "proto/profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

#define MAX_LABELS (6 + PL__COUNT)    /* thread_id, thread_name, status, pid, process, ns_pid */

/* ------------------------------------------------------------- string table */

/* Strings by index; index 0 is "" as the format requires. Entries are not copied. */
struct strtab {
	char **s;
	uint32_t n, cap;
	uint32_t *slots;
	uint32_t nslots;
};

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int strtab_grow(struct strtab *t)
{
	uint32_t ncap = t->cap ? t->cap * 2 : 256, nslots = ncap * 2;
	char **s = realloc(t->s, ncap * sizeof(*s));
	uint32_t *slots;

	if (!s)
		return -PBP_E_NOMEM;
	t->s = s;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t h = str_hash(s[i]) & (nslots - 1);

		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	t->cap = ncap;
	return 0;
}

/* Index of s, added if new; -1 when out of memory. s must outlive the table. */
static int64_t str_id(struct strtab *t, const char *s)
{
	uint32_t h;

	if (t->n == t->cap && strtab_grow(t) != 0)
		return -PBP_E_NOMEM;
	for (h = str_hash(s) & (t->nslots - 1); t->slots[h]; h = (h + 1) & (t->nslots - 1))
		if (strcmp(t->s[t->slots[h] - 1], s) == 0)
			return t->slots[h] - 1;
	t->s[t->n] = (char *)s;     /* protobuf-c's type is char **; never written through */
	t->slots[h] = ++t->n;
	return t->n - 1;
}

/* ------------------------------------------------------------- building */

struct builder {
	const struct agg *a;
	bool series_labels;     /* only the labels a profile store may make a series of */
	struct functab ft;
	struct strtab st;
	bool failed;            /* a string could not be added: ENOMEM */
	/* what the Profile points into */
	Function *funcs, **funcp;
	Location *locs, **locp;
	Mapping *maps, **mapp;
	Line *lines, **linep;
	uint32_t *loc_of;       /* agg location id -> pprof location id, 0 for labels */
	uint32_t nlocs;
	Sample *samples, **samplep;
	uint64_t *loc_ids;
	int64_t *values;
	Label *labels, **labelp;
};

static int64_t sid(struct builder *b, const char *s)
{
	int64_t id = str_id(&b->st, s);

	if (id < 0) {
		b->failed = true;
		return 0;
	}
	return id;
}

static void build_functions(struct builder *b)
{
	for (uint32_t i = 0; i < b->ft.n; i++) {
		const struct func_stat *f = &b->ft.f[i];
		Function *fn = &b->funcs[i];

		perftools__profiles__function__init(fn);
		fn->id = i + 1;
		fn->name = sid(b, f->name);
		/*
		 * No system name: Python has no mangled one, and pprof "demangles"
		 * a function whose two names are equal, cutting what looks like
		 * C++ template arguments: "<module>" became "", shown <unknown>.
		 */
		fn->system_name = 0;
		fn->filename = sid(b, f->file);
		fn->start_line = 0;     /* the def line is not known: 0 says so */
		b->funcp[i] = fn;
	}
}

static void build_mappings(struct builder *b)
{
	const struct aggnat *n = agg_nat_of(b->a);

	for (uint32_t i = 0; i < aggnat_nmappings(n); i++) {
		const struct agg_mapping *am = aggnat_mapping(n, i);
		Mapping *m = &b->maps[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->memory_start = am->start;
		m->memory_limit = am->limit;
		m->file_offset = am->offset;
		m->filename = sid(b, am->path);
		m->build_id = am->build_id[0] ? sid(b, am->build_id) : 0;
		m->has_functions = true;        /* named here (those we could: the rest by library) */
		b->mapp[i] = m;
	}
}

/* A native location's mapping and address. */
static void native_location(struct builder *b, uint32_t id, Location *l)
{
	uint32_t mapping;
	uint64_t addr;

	if (aggnat_get(agg_nat_of(b->a), id, &mapping, &addr))
		l->mapping_id = mapping + 1, l->address = addr;
}

static void build_locations(struct builder *b)
{
	for (uint32_t id = 0; id < agg_nlocs(b->a); id++) {
		const char *name, *file;
		uint32_t kind, k = b->nlocs;
		int line;

		agg_loc_info(b->a, id, &name, &file, &line, &kind);
		b->loc_of[id] = 0;
		if (b->ft.of_loc[id] == FUNC_NONE)
			continue;
		perftools__profiles__line__init(&b->lines[k]);
		b->lines[k].function_id = b->ft.of_loc[id] + 1;
		b->lines[k].line = line > 0 ? line : 0;
		b->linep[k] = &b->lines[k];
		perftools__profiles__location__init(&b->locs[k]);
		b->locs[k].id = k + 1;
		b->locs[k].n_line = 1;
		b->locs[k].line = &b->linep[k];
		native_location(b, id, &b->locs[k]);
		b->locp[k] = &b->locs[k];
		b->loc_of[id] = ++b->nlocs;
	}
}

/* "thread 123 MainThread" -> "MainThread"; "process 42 cmd" -> "cmd": the text after the id. */
/* What a root label says after its ids: a thread's name, a process's command line. */
static const char *after_id(const char *label, const char *word)
{
	const char *rest = NULL;
	uint32_t id, ns;

	return root_label_parse(label, word, &id, &ns, &rest) ? rest : NULL;
}

static Label *add_label(struct builder *b, Sample *s, const char *key)
{
	Label *l = s->label[s->n_label++];

	perftools__profiles__label__init(l);
	l->key = sid(b, key);
	return l;
}

/* Whole-host runs: which Python, container, Kubernetes pod and service a sample came from. */
static void process_labels(struct builder *b, Sample *s, const struct proc_meta *m, bool process)
{
	if (!m)
		return;
	if (m->ns_pid) {        /* in another PID namespace: both ids, whatever else is labelled */
		if (!process)
			add_label(b, s, "pid")->num = m->pid;
		add_label(b, s, "ns_pid")->num = m->ns_pid;
	}
	for (int i = 0; i < PL__COUNT; i++)
		if (m->label[i][0])
			add_label(b, s, proc_label_key[i])->str = sid(b, m->label[i]);
}

/* Labels from the stack's tags and its label frames. */
static void sample_labels(struct builder *b, Sample *s, const struct stack_tags *t, const uint32_t *locs,
			  uint32_t n)
{
	const char *thread = NULL, *process = NULL, *name, *file;
	bool has_status = t->status != ST_UNKNOWN;
	uint32_t kind;
	int line;

	for (uint32_t j = 0; j < n; j++) {
		agg_loc_info(b->a, locs[j], &name, &file, &line, &kind);
		if (kind == LOC_THREAD)
			thread = after_id(name, "thread");
		else if (kind == LOC_PROCESS)
			process = name;
		else if (kind == LOC_STATUS)
			has_status = true;
	}
	if (!thread)
		thread = agg_thread_name(b->a, t->pid, t->tid);
	if (t->tid)
		add_label(b, s, "thread_id")->num = t->tid;
	if (thread && !b->series_labels)       /* tid 0 has one only for the threads past the cap */
		add_label(b, s, "thread_name")->str = sid(b, thread);
	if (has_status && !b->series_labels)
		add_label(b, s, "status")->str = sid(b, status_info(t->status)->name);
	if (process)
		add_label(b, s, "pid")->num = t->pid;
	if (process && after_id(process, "process") && !b->series_labels)      /* the command line */
		add_label(b, s, "process")->str = sid(b, after_id(process, "process"));
	process_labels(b, s, agg_process(b->a, t->pid), process != NULL);
}

/*
 * pprof's values are int64: a count read back from a collapsed file can be
 * any uint64 (and its time in ns more), so both saturate instead of wrapping
 * (or, for the double, being undefined).
 */
static int64_t sat_i64(double x)
{
	return x >= 9223372036854775807.0 ? INT64_MAX : (int64_t)x;
}

/* Sample i: its Python locations leaf first (pprof's order), values and labels. */
static void build_sample(struct builder *b, uint32_t i, size_t *nids, const struct profile_meta *m)
{
	const struct stack_tags *t;
	uint64_t count;
	uint32_t n;
	const uint32_t *locs = agg_stack(b->a, i, &n, &count, &t);
	Sample *s = &b->samples[i];

	perftools__profiles__sample__init(s);
	s->location_id = b->loc_ids + *nids;
	for (uint32_t j = n; j-- > 0;)
		if (b->loc_of[locs[j]])
			s->location_id[s->n_location_id++] = b->loc_of[locs[j]];
	*nids += s->n_location_id;
	s->n_value = 2;
	s->value = b->values + 2 * (size_t)i;
	s->value[0] = count > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)count;
	s->value[1] = m->hz ? sat_i64((double)count * 1e9 / m->hz + 0.5) : 0;
	s->label = b->labelp + MAX_LABELS * (size_t)i;
	for (uint32_t k = 0; k < MAX_LABELS; k++)
		s->label[k] = &b->labels[MAX_LABELS * (size_t)i + k];
	sample_labels(b, s, t, locs, n);
	b->samplep[i] = s;
}

static size_t total_frames(const struct agg *a)
{
	size_t total = 0;
	uint64_t count;
	uint32_t n;

	for (uint32_t i = 0; i < agg_nstacks(a); i++) {
		agg_stack(a, i, &n, &count, NULL);
		total += n;
	}
	return total;
}

static int builder_alloc(struct builder *b)
{
	size_t nf = b->ft.n + 1, nl = agg_nlocs(b->a) + 1, ns = agg_nstacks(b->a) + 1;
	size_t nm = aggnat_nmappings(agg_nat_of(b->a)) + 1;

	b->funcs = calloc(nf, sizeof(*b->funcs));
	b->funcp = calloc(nf, sizeof(*b->funcp));
	b->locs = calloc(nl, sizeof(*b->locs));
	b->locp = calloc(nl, sizeof(*b->locp));
	b->maps = calloc(nm, sizeof(*b->maps));
	b->mapp = calloc(nm, sizeof(*b->mapp));
	b->lines = calloc(nl, sizeof(*b->lines));
	b->linep = calloc(nl, sizeof(*b->linep));
	b->loc_of = calloc(nl, sizeof(*b->loc_of));
	b->samples = calloc(ns, sizeof(*b->samples));
	b->samplep = calloc(ns, sizeof(*b->samplep));
	b->loc_ids = calloc(total_frames(b->a) + 1, sizeof(*b->loc_ids));
	b->values = calloc(2 * ns, sizeof(*b->values));
	b->labels = calloc(MAX_LABELS * ns, sizeof(*b->labels));
	b->labelp = calloc(MAX_LABELS * ns, sizeof(*b->labelp));
	return b->funcs && b->funcp && b->locs && b->locp && b->maps && b->mapp && b->lines && b->linep && b->loc_of &&
	       b->samples && b->samplep && b->loc_ids && b->values && b->labels && b->labelp ? 0 : -1;
}

static void builder_free(struct builder *b)
{
	free(b->funcs);
	free(b->funcp);
	free(b->locs);
	free(b->locp);
	free(b->maps);
	free(b->mapp);
	free(b->lines);
	free(b->linep);
	free(b->loc_of);
	free(b->samples);
	free(b->samplep);
	free(b->loc_ids);
	free(b->values);
	free(b->labels);
	free(b->labelp);
	free(b->st.s);
	free(b->st.slots);
	functab_free(&b->ft);
}

static void value_type(struct builder *b, ValueType *v, const char *type, const char *unit)
{
	perftools__profiles__value_type__init(v);
	v->type = sid(b, type);
	v->unit = sid(b, unit);
}

/* The Profile message over b's arrays; types[] and *period_type live in the caller. */
static void build_profile(struct builder *b, const struct profile_meta *m, Profile *p, ValueType *types,
			  ValueType **typep, ValueType *period_type)
{
	/* gil mode counts CPU samples of threads in the GIL's vicinity: still CPU time. */
	const char *time = m->mode && strcmp(m->mode, "wall") == 0 ? "wall" : "cpu";
	size_t nids = 0;

	perftools__profiles__profile__init(p);
	sid(b, "");
	value_type(b, &types[0], "samples", "count");
	value_type(b, &types[1], time, "nanoseconds");
	value_type(b, period_type, time, "nanoseconds");
	typep[0] = &types[0], typep[1] = &types[1];
	p->n_sample_type = 2;
	p->sample_type = typep;
	p->period_type = period_type;
	p->period = m->hz ? (int64_t)(1e9 / m->hz + 0.5) : 0;
	p->time_nanos = (int64_t)m->start_unix_ns;
	p->duration_nanos = (int64_t)m->duration_ns;
	build_functions(b);
	build_mappings(b);
	build_locations(b);
	for (uint32_t i = 0; i < agg_nstacks(b->a); i++)
		build_sample(b, i, &nids, m);
	p->n_function = b->ft.n, p->function = b->funcp;
	p->n_location = b->nlocs, p->location = b->locp;
	p->n_mapping = aggnat_nmappings(agg_nat_of(b->a)), p->mapping = b->mapp;
	p->n_sample = agg_nstacks(b->a), p->sample = b->samplep;
	p->n_string_table = b->st.n, p->string_table = b->st.s;
}

/* ------------------------------------------------------------- output */

/* gzip (not bare zlib): what pprof readers expect of a .pb.gz. */
static int gzip_write(const uint8_t *buf, size_t len, FILE *o)
{
	uint8_t out[1 << 16];
	z_stream z = { 0 };
	int ret;

	if (len > UINT32_MAX ||
	    deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -PBP_E_IO;
	z.next_in = (uint8_t *)buf;
	z.avail_in = (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		ret = deflate(&z, Z_FINISH);
		if (ret == Z_STREAM_ERROR ||
		    fwrite(out, 1, sizeof(out) - z.avail_out, o) != sizeof(out) - z.avail_out) {
			deflateEnd(&z);
			return -PBP_E_IO;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

int pprof_write(const struct agg *a, const struct profile_meta *m, FILE *o)
{
	struct builder b = { .a = a, .series_labels = m->series_labels };
	ValueType types[2], *typep[2], period_type;
	Profile p;
	uint8_t *buf = NULL;
	size_t len;
	int err = -PBP_E_NOMEM;     /* what every failure up to gzip_write is */

	if (functab_build(a, &b.ft) != 0 || builder_alloc(&b) != 0)
		goto out;
	build_profile(&b, m, &p, types, typep, &period_type);
	if (b.failed)
		goto out;
	len = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto out;
	perftools__profiles__profile__pack(&p, buf);
	stagecpu_enter(STAGE_GZIP);
	err = gzip_write(buf, len, o);
	stagecpu_leave();
out:
	free(buf);
	builder_free(&b);
	return err ? err : ferror(o) ? -PBP_E_IO : 0;
}
