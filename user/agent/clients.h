/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_CLIENTS_H
#define PBP_AGENT_CLIENTS_H

#include <stdint.h>
#include <sys/socket.h>

/*
 * The HTTP server's connections, kept so that slow or idle clients cannot
 * hold it: a connection that is not being answered must deliver its whole
 * request head (TLS handshake included) within CLIENTS_HEAD_S of its accept
 * or of its previous answer, however it trickles; and when too many are
 * waiting for their head, the oldest one of the address with the most goes
 * first, so that one client (or one address) cannot fill the server.
 * A connection is closed by shutdown() of its socket: libmicrohttpd sees
 * the end and frees it on its own thread.
 */
#define CLIENTS_HEAD_S 5
#define CLIENTS_WAITING_MAX 64          /* waiting for their head, all addresses */
#define CLIENTS_WAITING_PER_ADDR 8      /* of one address */

struct clients;
struct client;

/* The keeper and its thread (the deadlines): 0, or -PBP_E_NOMEM. */
int clients_new(struct clients **out);
void clients_free(struct clients *cs);
/* A connection accepted on fd from addr: its handle (NULL out of memory: then it is closed). */
struct client *clients_add(struct clients *cs, int fd, const struct sockaddr *addr);
/* Its head arrived: no deadline while it is answered. */
void clients_answering(struct clients *cs, struct client *c);
/* Its answer is sent: the deadline runs again for the next request on the connection. */
void clients_answered(struct clients *cs, struct client *c);
/* libmicrohttpd closes it (before it closes the socket). */
void clients_remove(struct clients *cs, struct client *c);
/* Connections closed for a late head, and for room. */
void clients_stats(struct clients *cs, uint64_t *late, uint64_t *shed);

#endif /* PBP_AGENT_CLIENTS_H */
