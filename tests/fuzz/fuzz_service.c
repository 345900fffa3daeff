/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the agent's service names: arbitrary bytes as a
 * process's /proc/PID/cmdline (any process on the node writes its own argv),
 * then the name made safe for Pyroscope.
 *
 * The input is handed over in an exact-size heap copy, so ASan catches any
 * read past len. It aborts when the name is unterminated, longer than the
 * buffer, not a part of one argument, or when sanitizing leaves a
 * character Pyroscope refuses or changes a name that was already safe.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "agent/service.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

static bool safe(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("_.-/", *s)))
			return false;
	return true;
}

/* name is a substring of one NUL-separated argument of argv. */
static bool in_an_argument(const char *argv, size_t n, const char *name)
{
	for (size_t pos = 0; pos < n; pos += strnlen(argv + pos, n - pos) + 1) {
		char arg[512];

		snprintf(arg, sizeof(arg), "%.*s", (int)strnlen(argv + pos, n - pos), argv + pos);
		if (strstr(arg, name))
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1), out[64], again[64];

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(out, 0x5a, sizeof(out));
	service_script(copy, size, out, sizeof(out));
	MUST(memchr(out, '\0', sizeof(out)));
	MUST(!out[0] || size < sizeof(out) || in_an_argument(copy, size, out) || strlen(out) == sizeof(out) - 1);
	memcpy(again, out, sizeof(out));
	service_sanitize(out);
	MUST(out[0] && safe(out));
	if (again[0] && safe(again))
		MUST(strcmp(again, out) == 0);
	free(copy);
	return 0;
}
