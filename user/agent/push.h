/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_PUSH_H
#define PBP_AGENT_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Push to Grafana Pyroscope's ingest API: POST URL/ingest?name=SERVICE{k=v,...}
 * &from=&until=&format=pprof&spyName=pybpfprof with the gzipped pprof as the
 * body, from a thread of its own, so that a slow or absent backend never
 * holds up sampling. Windows wait in a bounded queue; when it is full the
 * oldest goes (counted). 408, 429, 5xx and connection failures are retried
 * with exponential backoff and jitter; any other answer drops the window.
 */
struct push_opts {
	const char *url;                /* the server's base URL: http(s)://host:port[/prefix] */
	const char *tenant;             /* X-Scope-OrgID; NULL: none */
	const char *basic_auth;         /* "user:password"; NULL: none */
	const char *bearer_token_file;  /* read before each push (tokens rotate); NULL: none */
	uint32_t queue_size;            /* windows */
	size_t queue_bytes;             /* and their bodies' bytes together */
};

struct push_stats {
	uint64_t pushes, errors, bytes, dropped, rejected;
	uint32_t queued;
	size_t queued_bytes;
};

struct pusher;

/* An http:// or https:// URL that libcurl can parse? */
bool push_url_valid(const char *url);
/* Start the thread: 0 or -PBP_E_NOMEM. */
int push_start(const struct push_opts *o, struct pusher **out);
/*
 * Queue one window of one series: name is "SERVICE{k=v,...}" (values
 * already made safe), times in Unix seconds; the body is taken (freed by the
 * pusher). 0 or -PBP_E_NOMEM (the body is freed then too).
 */
int push_enqueue(struct pusher *p, const char *name, uint64_t from_s, uint64_t until_s, void *body, size_t len);
void push_stats(struct pusher *p, struct push_stats *st);
/* Send what is queued until deadline (monotonic ns), then stop the thread and free. */
void push_stop(struct pusher *p, uint64_t deadline_ns);

#endif /* PBP_AGENT_PUSH_H */
