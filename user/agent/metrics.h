/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_METRICS_H
#define PBP_AGENT_METRICS_H

#include <stddef.h>

/* One line of the Prometheus text exposition format (version 0.0.4). */
struct metric {
	const char *name;
	const char *type;       /* "counter" or "gauge" */
	const char *help;
	double value;
	const char *labels;     /* 'stage="naming"' for one row of a family, else NULL */
};

/*
 * The rows as the exposition text: *body malloc'ed. 0 or -PBP_E_NOMEM. The
 * rows of one family (same name, their labels apart) follow each other:
 * HELP and TYPE are said once, before the first.
 */
int metrics_format(const struct metric *rows, size_t n, char **body, size_t *len);
/* The process's own CPU seconds (user + system) and resident bytes. */
double metrics_cpu_seconds(void);
double metrics_rss_bytes(void);

#endif /* PBP_AGENT_METRICS_H */
