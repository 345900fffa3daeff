/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd's own limits do not protect a server from slow clients: its
 * timeout is an idle one that every byte resets, and its per-address and
 * total limits refuse the newcomer, so eight sockets trickling a header
 * each lock everyone of their address out, and 32 everyone. Here the
 * deadline counts from the accept, and the one turned away for room is an
 * old waiting connection of the busiest address, never the newcomer.
 * libmicrohttpd calls back from its one thread; the deadline thread shuts
 * sockets down under the same lock, and a connection leaves the list
 * (clients_remove) before libmicrohttpd closes its socket, so a descriptor
 * shut down is always still the connection's.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "agent/clients.h"
#include "core/clock.h"
#include "core/errors.h"

#define HEAD_NS ((uint64_t)CLIENTS_HEAD_S * 1000000000ull)
#define THREAD_STACK (256u << 10)       /* it only walks a list: not the 8 MiB of address space a default stack takes */

struct client {
	struct client *prev, *next;     /* oldest wait first */
	int fd;
	uint64_t since_ns;              /* accepted, or last answered */
	bool answering, shut;
	struct sockaddr_storage addr;
};

struct clients {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct client *head, *tail;
	bool stopping;
	uint64_t late, shed;
};

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return true;
}

static bool waiting(const struct client *c)
{
	return !c->answering && !c->shut;
}

/* Connections of c's address waiting for their head (lock held). */
static unsigned waiting_like(const struct clients *cs, const struct client *c)
{
	unsigned n = 0;

	for (const struct client *o = cs->head; o; o = o->next)
		n += waiting(o) && same_addr(&o->addr, &c->addr);
	return n;
}

static void shut(struct client *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->shut = true;
}

static void unlink_client(struct clients *cs, struct client *c)
{
	*(c->prev ? &c->prev->next : &cs->head) = c->next;
	*(c->next ? &c->next->prev : &cs->tail) = c->prev;
	c->prev = c->next = NULL;
}

static void append(struct clients *cs, struct client *c)
{
	c->prev = cs->tail;
	c->next = NULL;
	*(cs->tail ? &cs->tail->next : &cs->head) = c;
	cs->tail = c;
}

/*
 * Room for a newcomer (lock held): over the per-address bound, the oldest
 * waiting one of its address goes; over the total, the oldest waiting one
 * of the address that has the most. The newcomer itself is never chosen, so
 * a client that sends its request at once always gets its turn.
 */
static void make_room(struct clients *cs, struct client *nc)
{
	struct client *victim = NULL;
	unsigned total = 0, most = 0;

	if (waiting_like(cs, nc) > CLIENTS_WAITING_PER_ADDR) {
		for (victim = cs->head; victim && !(waiting(victim) && same_addr(&victim->addr, &nc->addr));)
			victim = victim->next;
	} else {
		for (struct client *o = cs->head; o; o = o->next)
			total += waiting(o);
		for (struct client *o = cs->head; o && total > CLIENTS_WAITING_MAX; o = o->next) {
			unsigned n = waiting(o) && o != nc ? waiting_like(cs, o) : 0;

			if (n > most)
				most = n, victim = o;
		}
	}
	if (victim && victim != nc) {
		shut(victim);
		cs->shed++;
	}
}

/* Shut what is past its deadline (lock held): when the next deadline falls, or 0 for none. */
static uint64_t expire(struct clients *cs, uint64_t now)
{
	for (struct client *c = cs->head; c; c = c->next) {
		if (!waiting(c))
			continue;
		if (now < c->since_ns + HEAD_NS)
			return c->since_ns + HEAD_NS;  /* the list is in order of since */
		shut(c);
		cs->late++;
	}
	return 0;
}

static void *deadline_thread(void *arg)
{
	struct clients *cs = arg;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stopping) {
		uint64_t next = expire(cs, mono_ns());
		struct timespec ts;

		if (!next) {
			pthread_cond_wait(&cs->cond, &cs->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&cs->cond, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int clients_new(struct clients **out)
{
	struct clients *cs = calloc(1, sizeof(*cs));
	pthread_condattr_t ca;
	pthread_attr_t ta;
	int err;

	*out = NULL;
	if (!cs)
		return -PBP_E_NOMEM;
	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);     /* deadlines are mono_ns() */
	pthread_cond_init(&cs->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setstacksize(&ta, THREAD_STACK);
	err = pthread_create(&cs->thread, &ta, deadline_thread, cs);
	pthread_attr_destroy(&ta);
	if (err) {
		pthread_cond_destroy(&cs->cond);
		pthread_mutex_destroy(&cs->lock);
		free(cs);
		return -PBP_E_NOMEM;
	}
	*out = cs;
	return 0;
}

/* After libmicrohttpd stopped: every connection was removed. */
void clients_free(struct clients *cs)
{
	if (!cs)
		return;
	pthread_mutex_lock(&cs->lock);
	cs->stopping = true;
	pthread_cond_signal(&cs->cond);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->thread, NULL);
	while (cs->head) {
		struct client *c = cs->head;

		unlink_client(cs, c);
		free(c);
	}
	pthread_cond_destroy(&cs->cond);
	pthread_mutex_destroy(&cs->lock);
	free(cs);
}

struct client *clients_add(struct clients *cs, int fd, const struct sockaddr *addr)
{
	struct client *c = calloc(1, sizeof(*c));

	if (!c) {
		shutdown(fd, SHUT_RDWR);
		return NULL;
	}
	c->fd = fd;
	c->since_ns = mono_ns();
	if (addr)
		memcpy(&c->addr, addr, addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								   : sizeof(struct sockaddr_in));
	pthread_mutex_lock(&cs->lock);
	append(cs, c);
	make_room(cs, c);
	if (cs->head == c)
		pthread_cond_signal(&cs->cond);     /* the thread was waiting for nothing */
	pthread_mutex_unlock(&cs->lock);
	return c;
}

void clients_answering(struct clients *cs, struct client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	c->answering = true;
	pthread_mutex_unlock(&cs->lock);
}

void clients_answered(struct clients *cs, struct client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	c->answering = false;
	c->since_ns = mono_ns();
	unlink_client(cs, c);
	append(cs, c);          /* the list stays in order of since */
	pthread_cond_signal(&cs->cond);
	pthread_mutex_unlock(&cs->lock);
}

void clients_remove(struct clients *cs, struct client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	unlink_client(cs, c);
	pthread_mutex_unlock(&cs->lock);
	free(c);
}

void clients_stats(struct clients *cs, uint64_t *late, uint64_t *shed)
{
	pthread_mutex_lock(&cs->lock);
	*late = cs->late;
	*shed = cs->shed;
	pthread_mutex_unlock(&cs->lock);
}
