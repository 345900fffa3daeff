/* SPDX-License-Identifier: MIT */
/*
 * Prometheus's text format: "# HELP", "# TYPE", then "name value" per
 * metric. Our own CPU time and memory use the names Prometheus's client
 * libraries give them, so the usual dashboards show the agent too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/metrics.h"
#include "core/errors.h"

int metrics_format(const struct metric *rows, size_t n, char **body, size_t *len)
{
	FILE *o = open_memstream(body, len);

	if (!o)
		return -PBP_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(rows[i].name, rows[i - 1].name) != 0)
			fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", rows[i].name, rows[i].help, rows[i].name,
				rows[i].type);
		fprintf(o, rows[i].labels ? "%s{%s} %.17g\n" : "%s%s %.17g\n", rows[i].name,
			rows[i].labels ? rows[i].labels : "", rows[i].value);
	}
	if (fclose(o) != 0) {
		free(*body);
		*body = NULL;
		return -PBP_E_NOMEM;
	}
	return 0;
}

double metrics_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* statm's second field: resident pages. */
double metrics_rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (double)resident * (double)sysconf(_SC_PAGESIZE);
}
