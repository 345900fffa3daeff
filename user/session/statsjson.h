/* SPDX-License-Identifier: MIT */
#ifndef PBP_SESSION_STATSJSON_H
#define PBP_SESSION_STATSJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct collector;
struct jsonw;
struct target;

/* Members of the --stats=json object: the sampler's counters (st: sampler_stats), the collector's, one process. */
void stats_json_sampler(struct jsonw *w, const struct collector *c, const uint64_t *st);
void stats_json_collector(struct jsonw *w, const struct collector *c);
void stats_json_target(struct jsonw *w, const struct target *t);

#endif /* PBP_SESSION_STATSJSON_H */
