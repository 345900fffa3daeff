/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for cgroup_parse: arbitrary bytes as /proc/PID/cgroup.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
 *       tests/fuzz/fuzz_cgroup.c user/proc/cgroup.c -o /tmp/fc
 *   /tmp/fc -max_total_time=60 /tmp/fc-corpus tests/fuzz/corpus/cgroup
 *
 * The input is handed over in an exact-size heap copy, not NUL-terminated,
 * so ASan catches any read past len. Besides that it aborts when a result
 * is ill-formed (fields unterminated, an id that is not 64 hex digits, a
 * runtime without a container, a path that is not in the input) or when
 * parsing the same bytes twice disagrees.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "core/errors.h"
#include "proc/cgroup.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static bool lhex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static void check_pod(const char *u)
{
	size_t n = strlen(u);

	MUST(n == 0 || n == 32 || n == 36);
	if (n == 32)
		MUST(lhex(u, 32));
	if (n == 36)
		for (size_t i = 0; i < 36; i++)
			MUST((i == 8 || i == 13 || i == 18 || i == 23) ? u[i] == '-' : lhex(u + i, 1));
}

/* The path is a cut of what follows "ID:CONTROLLERS:" on some line of the input. */
static bool path_in_input(const char *path, const uint8_t *data, size_t size)
{
	size_t n = strlen(path);

	for (size_t i = 0; i + n <= size; i++)
		if (memcmp(data + i, path, n) == 0 && i > 0 && data[i - 1] == ':')
			return true;
	return false;
}

static void check(const struct cgroup_info *c, int r, const uint8_t *data, size_t size)
{
	static const char *runtimes[] = { "", "docker", "containerd", "cri-o", "podman" };
	bool known = false;

	MUST(r == 0 || r == -PBP_E_CORRUPT);
	MUST(terminated(c->path, sizeof(c->path)) && terminated(c->container_id, sizeof(c->container_id)) &&
	     terminated(c->pod_uid, sizeof(c->pod_uid)) && terminated(c->runtime, sizeof(c->runtime)));
	if (r == -PBP_E_CORRUPT) {
		MUST(!c->path[0] && !c->container_id[0] && !c->pod_uid[0] && !c->runtime[0]);
		return;
	}
	MUST(c->path[0] == '/');
	MUST(!strchr(c->path, '\n'));
	MUST(path_in_input(c->path, data, size));
	MUST(strlen(c->container_id) == 0 || (strlen(c->container_id) == 64 && lhex(c->container_id, 64)));
	check_pod(c->pod_uid);
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		known |= strcmp(c->runtime, runtimes[i]) == 0;
	MUST(known);
	MUST(c->container_id[0] || !c->runtime[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cgroup_info a, b;
	char *copy = malloc(size ? size : 1);
	int r;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	r = cgroup_parse(copy, size, &a);
	check(&a, r, data, size);
	MUST(cgroup_parse(copy, size, &b) == r);
	MUST(memcmp(&a, &b, sizeof(a)) == 0);
	free(copy);
	return 0;
}
