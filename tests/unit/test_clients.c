/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server's connection keeper (agent/clients.c), on socket pairs:
 * past 8 connections of one address waiting for their head, its oldest
 * waiting one is shut down, never the newcomer nor one being answered;
 * past 64 in all, the oldest of the busiest address goes, so that a lone
 * client of another address keeps its turn. (The 5 s deadline is the
 * integration test's: test_agent_exposed.py.)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/clients.h"
#include "unit.h"

#define MAX 128

static int peer[MAX], fds[MAX];
static struct client *cl[MAX];

static struct sockaddr_in addr_of(const char *ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(40000) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* Connection i from ip: its server side to the keeper, its client side kept to look at. */
static void add(struct clients *cs, int i, const char *ip)
{
	struct sockaddr_in a = addr_of(ip);
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
		abort();
	fds[i] = sv[0];
	peer[i] = sv[1];
	cl[i] = clients_add(cs, fds[i], (struct sockaddr *)&a);
}

/* Was connection i shut down? Its client side reads the end. */
static bool shut(int i)
{
	char c;

	return read(peer[i], &c, 1) == 0;
}

static void drop(struct clients *cs, int i)
{
	clients_remove(cs, cl[i]);
	close(fds[i]);
	close(peer[i]);
}

int main(void)
{
	struct clients *cs;
	uint64_t late, shed;
	int n = 0;

	CHECK_EQ_INT(clients_new(&cs), 0);
	/* 8 of one address wait; one being answered does not count and is never chosen */
	for (; n < 8; n++)
		add(cs, n, "127.0.0.1");
	clients_answering(cs, cl[0]);
	add(cs, n++, "127.0.0.1");
	for (int i = 0; i < n; i++)
		CHECK(!shut(i));
	add(cs, n++, "127.0.0.1");      /* the 9th waiting: the oldest waiting one goes */
	CHECK(!shut(0) && shut(1) && !shut(2) && !shut(n - 1));
	/* answered: it waits again, as the newest */
	clients_answered(cs, cl[0]);
	add(cs, n++, "127.0.0.1");
	CHECK(shut(2) && !shut(0));
	add(cs, n++, "127.0.0.1");
	CHECK(shut(3) && !shut(0));
	clients_stats(cs, &late, &shed);
	CHECK_EQ_INT(shed, 3);
	CHECK_EQ_INT(late, 0);
	for (int i = 0; i < n; i++)
		drop(cs, i);

	/* 64 in all: 56 from seven busy addresses, then lone ones; the busiest address pays */
	n = 0;
	for (int a = 0; a < 7; a++)
		for (int k = 0; k < 8; k++) {
			char ip[32];

			snprintf(ip, sizeof(ip), "127.0.1.%d", a + (a == 6 && k >= 4));   /* 127.0.1.6 has 4, .7 has 4 */
			add(cs, n++, ip);
		}
	for (int k = 0; k < 8; k++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "127.0.2.%d", k);
		add(cs, n++, ip);
	}
	for (int i = 0; i < n; i++)
		CHECK(!shut(i));
	add(cs, n++, "127.0.3.1");      /* the 65th: the oldest of 127.0.1.0 (8 waiting) */
	CHECK(shut(0) && !shut(1) && !shut(n - 1));
	add(cs, n++, "127.0.3.2");      /* now 127.0.1.1 has the most (8) */
	CHECK(shut(8) && !shut(n - 1) && !shut(n - 2));
	for (int i = 0; i < n; i++)
		drop(cs, i);
	clients_free(cs);
	return unit_done("test_clients");
}
