/* SPDX-License-Identifier: MIT */
/*
 * Routes as a table, one row per path. libmicrohttpd runs the connections
 * on its own thread with limits on their number and their idle time, so a
 * scraper that hangs or a port scan cannot hold the agent; the handlers only
 * read what the sampling loop publishes under locks (history.c, metrics).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "agent/server.h"
#include "core/errors.h"

#define MAX_CONNECTIONS 32
#define MAX_PER_IP 8
#define IDLE_TIMEOUT_S 30

struct server {
	struct MHD_Daemon *d;
	struct server_ops ops;
};

int server_parse_listen(const char *s, struct sockaddr_storage *sa, socklen_t *len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
	const char *colon = strrchr(s, ':'), *port = colon ? colon + 1 : s;
	char addr[64] = "127.0.0.1", *end;
	unsigned long p;

	memset(sa, 0, sizeof(*sa));
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p == 0 || p > 65535 || *port == '-' || *port == '+')
		return -PBP_E_INVAL;
	if (colon) {
		size_t n = (size_t)(colon - s);

		if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
			s++, n -= 2;    /* [IPv6] */
		if (n == 0 || n >= sizeof(addr))
			return -PBP_E_INVAL;
		memcpy(addr, s, n);
		addr[n] = '\0';
	}
	if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)p);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*v6);
		return 0;
	}
	return -PBP_E_INVAL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, void *body,
			     size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *s)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)s, strlen(s), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result get_profile(struct server *s, struct MHD_Connection *c)
{
	const char *seconds = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
	const char *service = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "service");
	const char *pid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	char *body = NULL;
	size_t len = 0;
	int status = s->ops.profile(s->ops.ctx, seconds, service, pid, &body, &len);

	if (!body)
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return reply(c, (unsigned)status, status == 200 ? "application/octet-stream" : "text/plain; charset=utf-8",
		     body, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result get_metrics(struct server *s, struct MHD_Connection *c)
{
	char *body = NULL;
	size_t len = 0;

	if (s->ops.metrics(s->ops.ctx, &body, &len))
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
		     MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result get_health(struct server *s, struct MHD_Connection *c)
{
	(void)s;
	return text(c, MHD_HTTP_OK, "ok\n");
}

static const struct route {
	const char *path;
	enum MHD_Result (*get)(struct server *s, struct MHD_Connection *c);
} routes[] = {
	{ "/debug/pprof/profile", get_profile },
	{ "/metrics", get_metrics },
	{ "/healthz", get_health },
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **req)
{
	(void)version, (void)upload, (void)upload_len, (void)req;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(url, routes[i].path) == 0)
			return routes[i].get(cls, c);
	return text(c, MHD_HTTP_NOT_FOUND, "not found: /debug/pprof/profile, /metrics or /healthz\n");
}

int server_start(const struct sockaddr_storage *sa, const struct server_ops *ops, struct server **out)
{
	struct server *s = calloc(1, sizeof(*s));
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	int err;

	*out = NULL;
	if (!s)
		return -PBP_E_NOMEM;
	s->ops = *ops;
	if (sa->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)sa,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MAX_PER_IP,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
				MHD_OPTION_END);
	if (s->d) {
		*out = s;
		return 0;
	}
	err = errno == EADDRINUSE ? -PBP_E_ADDRINUSE : errno == EACCES ? -PBP_E_PERM : -PBP_E_NET;
	free(s);
	return err;
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}
