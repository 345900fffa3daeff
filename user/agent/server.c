/* SPDX-License-Identifier: MIT */
/*
 * Routes as a table, one row per path. libmicrohttpd runs the connections
 * on its own thread; clients.c keeps slow and idle ones from holding it,
 * and a request too large is refused at once. The handlers only read what
 * the sampling loop publishes under locks (history.c, metrics).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "agent/clients.h"
#include "agent/secret.h"
#include "agent/server.h"
#include "core/errors.h"
#include "core/stagecpu.h"

/*
 * libmicrohttpd's limits are only the last resort here (clients.c sheds
 * long before): its total bounds the descriptors; its per-address limit is
 * off, because it refuses the newcomer, which lets 8 idle sockets lock out
 * every client of their address. Its idle timeout bounds a client that
 * reads its answer too slowly.
 */
#define MAX_CONNECTIONS 256
#define IDLE_TIMEOUT_S 10
/* A query of more parameters is refused (the routes take 3): libmicrohttpd 0.9.75 never answers one that fills its pool. */
#define MAX_PARAMS 32

struct server {
	struct MHD_Daemon *d;
	struct server_ops ops;
	struct clients *clients;
	struct token *token;
	struct tls_pair *tls;
};

/* The request's context, from the URI callback to the handler. */
static char params_ok, params_too_many;

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

/*
 * Said when the request line is in, before libmicrohttpd splits the query:
 * one with too many parameters has its query cut here (the bytes after '?'
 * are libmicrohttpd's buffer, which it reads next) and is answered 414.
 */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
	char *q = strchr(uri, '?');
	unsigned n = 0;

	(void)cls, (void)c;
	for (const char *p = q; p && *p && n <= MAX_PARAMS; p++)
		n += *p == '&' || *p == ';' || p == q;
	if (n <= MAX_PARAMS)
		return &params_ok;
	q[1] = '\0';
	return &params_too_many;
}

static struct client *client_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
			     enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;
	const union MHD_ConnectionInfo *fd, *addr;

	/* libmicrohttpd's one thread: all of it is serving, but for the stages a pull enters */
	stagecpu_thread(STAGE_HTTP);
	stagecpu_flush();
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		clients_remove(s->clients, *socket_context);
		*socket_context = NULL;
		return;
	}
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	*socket_context = fd ? clients_add(s->clients, fd->connect_fd, addr ? addr->client_addr : NULL) : NULL;
}

static void request_done(void *cls, struct MHD_Connection *c, void **req, enum MHD_RequestTerminationCode why)
{
	struct server *s = cls;

	(void)req, (void)why;
	clients_answered(s->clients, client_of(c));
	stagecpu_flush();       /* the answer was sent: its cost is counted before the next scrape */
}

static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
	static const char msg[] = "a bearer token is needed (Authorization: Bearer TOKEN)\n";
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"pybpfprof\"");
	ret = MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **req)
{
	struct server *s = cls;
	const struct route *route = NULL;

	(void)version, (void)upload, (void)upload_len;
	clients_answering(s->clients, client_of(c));
	if (*req == &params_too_many)
		return text(c, MHD_HTTP_URI_TOO_LONG, "too many query parameters\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(url, routes[i].path) == 0)
			route = &routes[i];
	if (!route)
		return text(c, MHD_HTTP_NOT_FOUND, "not found: /debug/pprof/profile, /metrics or /healthz\n");
	/* the probe's path stays open: it says only that the agent runs */
	if (s->token && route->get != get_health &&
	    !token_accepts(s->token, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)))
		return unauthorized(c);
	return route->get(s, c);
}

/* The token and the TLS pair, read before listening: 0, or -PBP_E_* with *what naming the file. */
static int load_secrets(struct server *s, const struct server_opts *o, const char **what)
{
	int err = 0;

	if (o->token_file) {
		*what = o->token_file;
		err = token_open(o->token_file, &s->token);
	}
	if (!err && o->cert_file) {
		*what = o->cert_file;
		err = tls_pair_open(o->cert_file, o->key_file, &s->tls);
	}
	return err;
}

static void server_free(struct server *s)
{
	if (s->d)
		MHD_stop_daemon(s->d);
	clients_free(s->clients);   /* after the daemon: it removed every connection */
	token_free(s->token);
	tls_pair_free(s->tls);
	free(s);
}

/*
 * errno after MHD_start_daemon: EADDRINUSE, EACCES from bind; ENOMEM or
 * EAGAIN when its thread could not be made (its stack is an mmap).
 */
static int start_error(int e)
{
	switch (e) {
	case EADDRINUSE: return -PBP_E_ADDRINUSE;
	case EACCES: return -PBP_E_PERM;
	case ENOMEM:
	case EAGAIN: return -PBP_E_NOMEM;
	case EMFILE:
	case ENFILE: return -PBP_E_MFILE;
	default: return -PBP_E_NET;
	}
}

/*
 * With TLS the thread waits in poll(), not epoll: libmicrohttpd's epoll
 * loop (0.9.75, and 1.0 reads the same) keeps a connection whose handshake
 * waits for the client in its ready list after GnuTLS says EAGAIN, and then
 * spins through every such connection without sleeping. One client that
 * sends a byte of its hello and stops held half a core for as long as it
 * stayed; poll() waits on the direction GnuTLS asks for. Its cost per wakeup
 * grows with the connections held, which MAX_CONNECTIONS bounds.
 */
int server_start(const struct sockaddr_storage *sa, const struct server_ops *ops, const struct server_opts *o,
		 struct server **out, const char **what)
{
	struct server *s = calloc(1, sizeof(*s));
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	int err;

	*out = NULL;
	*what = NULL;
	if (!s)
		return -PBP_E_NOMEM;
	s->ops = *ops;
	err = load_secrets(s, o, what);
	if (!err)
		err = clients_new(&s->clients);
	if (err)
		goto fail;
	*what = NULL;
	if (sa->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (s->tls)
		flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_TLS | (flags & MHD_USE_IPv6);
	errno = 0;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)sa,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
				MHD_OPTION_NOTIFY_CONNECTION, connection_event, s,
				MHD_OPTION_NOTIFY_COMPLETED, request_done, s,
				MHD_OPTION_URI_LOG_CALLBACK, uri_seen, s,
				s->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, tls_pair_callback(),
				MHD_OPTION_END);
	if (s->d) {
		*out = s;
		return 0;
	}
	err = start_error(errno);
fail:
	server_free(s);
	return err;
}

void server_stats(struct server *s, uint64_t *late, uint64_t *shed)
{
	clients_stats(s->clients, late, shed);
}

bool server_tls_supported(void)
{
	return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES &&
	       MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) == MHD_YES;
}

void server_stop(struct server *s)
{
	if (s)
		server_free(s);
}
