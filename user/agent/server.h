/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_SERVER_H
#define PBP_AGENT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The agent's HTTP endpoints, served by libmicrohttpd from a thread of its
 * own: GET /debug/pprof/profile (what Parca and Grafana Alloy's
 * pyroscope.scrape fetch), /metrics (Prometheus), /healthz.
 */
struct server_ops {
	/*
	 * A profile for the query's parameters (NULL when absent): an HTTP
	 * status; on 200 *body (malloc'ed, taken) is the gzipped pprof, else a
	 * line saying what was wrong.
	 */
	int (*profile)(void *ctx, const char *seconds, const char *service, const char *pid, char **body,
		       size_t *len);
	/* The Prometheus text exposition: 0, or -PBP_E_NOMEM. */
	int (*metrics)(void *ctx, char **body, size_t *len);
	void *ctx;
};

/* "[ADDR:]PORT", ADDR an IPv4 address or [IPv6]: 0 (ADDR absent: 127.0.0.1), or -PBP_E_INVAL. */
int server_parse_listen(const char *s, struct sockaddr_storage *sa, socklen_t *len);

/* What locks the endpoints; NULL: not locked. key_file goes with cert_file. */
struct server_opts {
	const char *token_file;         /* a bearer token for all but /healthz */
	const char *cert_file, *key_file;       /* PEM: serve HTTPS */
};

struct server;
/*
 * Listen and serve: 0, or -PBP_E_* (the address taken, not allowed, out of
 * memory, ...). When a file of o is what failed (-PBP_E_IO with errno,
 * -PBP_E_INVAL: empty, not PEM), *what is its path, else NULL.
 */
int server_start(const struct sockaddr_storage *sa, const struct server_ops *ops, const struct server_opts *o,
		 struct server **out, const char **what);
void server_stop(struct server *s);
/* Connections closed for a late head, and for room (clients.c). */
void server_stats(struct server *s, uint64_t *late, uint64_t *shed);
/* Was libmicrohttpd built with TLS (GnuTLS) and its certificate callback? */
bool server_tls_supported(void);

#endif /* PBP_AGENT_SERVER_H */
