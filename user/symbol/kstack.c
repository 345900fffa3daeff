/* SPDX-License-Identifier: MIT */
/* Kernel frames, named from kallsyms (kstack.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/kstack.h"
#include "symbol/kallsyms.h"
#include "aggregate/aggregate.h"
#include "core/clock.h"
#include "core/errors.h"

/* One stack id's frames as named, outermost first: made once, at its first sample. */
struct kframes {
	uint32_t n;
	char **name;            /* "[kernel] do_select" */
	const char **mod;       /* its module, NULL for the kernel's own */
};

struct kstacks {
	struct kallsyms syms;
	struct kframes *byid[PBP_KSTACK_ENTRIES];       /* ids are slots of the map, each stable */
	struct kstack_stats st;
};

struct kstacks *kstacks_new(const char *path)
{
	struct kstacks *k = calloc(1, sizeof(*k));
	int err;

	if (!k)
		return NULL;
	err = kallsyms_load(&k->syms, path);
	if (err == -PBP_E_NOMEM) {
		free(k);
		return NULL;
	}
	if (err)
		fprintf(stderr, "pybpfprof: cannot read %s: kernel frames will be " KERNEL_UNKNOWN "\n", path);
	else if (k->syms.zeroed)
		fprintf(stderr, "pybpfprof: %s lists every address as 0 (kernel.kptr_restrict): "
			"kernel frames will be " KERNEL_UNKNOWN "\n", path);
	k->st.symbols = k->syms.n;
	return k;
}

static void kframes_free(struct kframes *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->n; i++)
		free(f->name[i]);
	free(f->name);
	free(f->mod);
	free(f);
}

void kstacks_free(struct kstacks *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < PBP_KSTACK_ENTRIES; i++)
		kframes_free(k->byid[i]);
	kallsyms_free(&k->syms);
	free(k);
}

const struct kstack_stats *kstacks_stats(const struct kstacks *k)
{
	return &k->st;
}

/*
 * The tracepoint's call into the BPF program (bpf_trace_run4, and the
 * program itself, which kallsyms may not list) is innermost in a stack
 * taken at a switch-out: the profiler's own frames, not the thread's. Only
 * the first few are looked at: the hook is never deeper.
 */
#define HOOK_DEPTH 6

static bool is_hook(const char *fn)
{
	return strncmp(fn, "bpf_trace_run", 13) == 0 || strncmp(fn, "__bpf_trace_", 12) == 0 ||
	       strncmp(fn, "__traceiter_", 12) == 0;
}

/* How many of the innermost frames are the hook's: 0 when none is. */
static uint32_t hook_frames(struct kstacks *k, const uint64_t *ips, uint32_t nips)
{
	uint32_t inner = 0;
	const char *mod;

	for (uint32_t i = 0; i < nips && i < HOOK_DEPTH; i++) {
		const char *fn = kallsyms_name(&k->syms, ips[i], &mod);

		if (fn && is_hook(fn))
			inner = i + 1;
	}
	return inner;
}

/* Frame i of f (outermost first) named from ip; a run of unknown ones is one. */
static int name_frame(struct kstacks *k, struct kframes *f, uint64_t ip)
{
	const char *mod = "", *fn = kallsyms_name(&k->syms, ip, &mod);
	char buf[320];

	if (!fn && f->n && f->name[f->n - 1] && strcmp(f->name[f->n - 1], KERNEL_UNKNOWN) == 0)
		return 0;
	snprintf(buf, sizeof(buf), KERNEL_PREFIX "%s", fn ? fn : "[unknown]");
	if (!(f->name[f->n] = strdup(buf)))
		return -PBP_E_NOMEM;
	f->mod[f->n++] = fn && mod[0] ? mod : NULL;
	return 0;
}

static struct kframes *make_frames(struct kstacks *k, const uint64_t *ips, uint32_t nips, bool hooked)
{
	struct kframes *f = calloc(1, sizeof(*f));
	uint32_t inner = hooked ? hook_frames(k, ips, nips) : 0;

	if (!f || !(f->name = calloc(nips + 1, sizeof(*f->name))) ||
	    !(f->mod = calloc(nips + 1, sizeof(*f->mod)))) {
		kframes_free(f);
		return NULL;
	}
	for (uint32_t i = nips; i-- > inner;)
		if (name_frame(k, f, ips[i]) != 0) {
			kframes_free(f);
			return NULL;
		}
	return f;
}

/* The frames of s's stack, made at its id's first sample; NULL: none to be had. */
static struct kframes *frames_of(struct kstacks *k, const struct pbp_sample *s, kstack_read_fn read,
				 void *ctx, bool *nomem)
{
	uint64_t ips[PBP_KSTACK_DEPTH];
	uint32_t nips;

	*nomem = false;
	if (s->kstack < 0 || s->kstack >= PBP_KSTACK_ENTRIES)
		return NULL;
	if (k->byid[s->kstack])
		return k->byid[s->kstack];
	if (!read || (nips = read(ctx, s->kstack, ips)) == 0)
		return NULL;
	/* Only a switch-out's stack was taken from inside the hook (an interrupt's begins where it struck). */
	k->byid[s->kstack] = make_frames(k, ips, nips, s->flags & PBP_F_SWITCH_OUT);
	*nomem = !k->byid[s->kstack];
	return k->byid[s->kstack];
}

int kernel_frames(struct kstacks *k, const struct pbp_sample *s, kstack_read_fn read, void *ctx,
		  struct agg *a, uint32_t *locs, uint32_t *n, uint32_t max)
{
	uint64_t t0 = mono_ns();
	bool nomem;
	struct kframes *f = frames_of(k, s, read, ctx, &nomem);
	int64_t id = 0;

	if (nomem)
		return -PBP_E_NOMEM;
	if (!f) {
		k->st.missed++;
		if (*n < max && (id = agg_loc(a, KERNEL_UNKNOWN, NULL, -1, LOC_PY)) >= 0)
			locs[(*n)++] = (uint32_t)id;
		return id < 0 ? (int)id : 0;
	}
	for (uint32_t i = 0; i < f->n && *n < max; i++) {
		if ((id = agg_loc(a, f->name[i], f->mod[i], -1, LOC_PY)) < 0)
			return (int)id;
		locs[(*n)++] = (uint32_t)id;
		k->st.unnamed += f->mod[i] == NULL && strcmp(f->name[i], KERNEL_UNKNOWN) == 0;
	}
	k->st.stacks++;
	k->st.frames += f->n;
	k->st.ns += mono_ns() - t0;
	return 0;
}
