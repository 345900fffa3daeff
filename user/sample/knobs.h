/* SPDX-License-Identifier: MIT */
/*
 * The BPF object's knobs (its const volatile block, fixed at load) and
 * which of its programs load, from the sampler's options: what is off
 * costs nothing, the verifier prunes it.
 */
#ifndef PBP_SAMPLE_KNOBS_H
#define PBP_SAMPLE_KNOBS_H

#include <stdint.h>

struct profile_bpf;
struct sampler_opts;

/* Before profile_bpf__load: period_ns the sampling period, budget_pct the walks' CPU budget. */
void knobs_set(struct profile_bpf *skel, const struct sampler_opts *o, uint64_t period_ns,
	       unsigned budget_pct);

#endif /* PBP_SAMPLE_KNOBS_H */
