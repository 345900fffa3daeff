/* SPDX-License-Identifier: MIT */
/* The agent's --listen (agent/server.c): [ADDR:]PORT, loopback unless an address is given. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "agent/server.h"
#include "core/errors.h"
#include "unit.h"

static int parse(const char *s, int *family, unsigned *port, char *addr)
{
	struct sockaddr_storage sa;
	socklen_t len;
	int err = server_parse_listen(s, &sa, &len);

	if (err)
		return err;
	*family = sa.ss_family;
	if (sa.ss_family == AF_INET) {
		*port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
		inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, addr, 64);
	} else {
		*port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, addr, 64);
	}
	return 0;
}

int main(void)
{
	static const char *const bad[] = { "", ":", "0", "65536", "-1", "+80", "80x", "localhost:80",
					   "1.2.3:80", "[::1]", "::1:80x", "[]:80", "1.2.3.4:", "a:b:c" };
	char addr[64];
	unsigned port;
	int fam;

	CHECK_EQ_INT(parse("4100", &fam, &port, addr), 0);
	CHECK(fam == AF_INET && port == 4100);
	CHECK_EQ_STR(addr, "127.0.0.1");
	CHECK_EQ_INT(parse("0.0.0.0:80", &fam, &port, addr), 0);
	CHECK(fam == AF_INET && port == 80);
	CHECK_EQ_STR(addr, "0.0.0.0");
	CHECK_EQ_INT(parse("[::1]:65535", &fam, &port, addr), 0);
	CHECK(fam == AF_INET6 && port == 65535);
	CHECK_EQ_STR(addr, "::1");
	CHECK_EQ_INT(parse("10.1.2.3:4100", &fam, &port, addr), 0);
	CHECK_EQ_STR(addr, "10.1.2.3");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(parse(bad[i], &fam, &port, addr), -PBP_E_INVAL);
	return unit_done("test_listen");
}
