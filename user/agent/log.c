/* SPDX-License-Identifier: MIT */
/*
 * logfmt lines. Values are formatted first, then written quoted when they
 * hold a space, a quote, an equals sign or a control character, so that a
 * service called "my app" or a URL with a query stays one value.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agent/log.h"

static enum log_level level = LOG_INFO;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;       /* the pusher logs too */
static const char *const names[] = { "error", "warn", "info", "debug" };

int log_level_by_name(const char *name)
{
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (strcasecmp(name, names[i]) == 0)
			return i;
	return -1;
}

void log_set_level(enum log_level l)
{
	level = l;
}

static void put_value(FILE *o, const char *v)
{
	if (v[0] && !v[strcspn(v, " \"=\\\t\r\n")]) {
		fputs(v, o);
		return;
	}
	fputc('"', o);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fprintf(o, "\\%c", *v);
		else if ((unsigned char)*v < 0x20)
			fprintf(o, "\\x%02x", (unsigned char)*v);
		else
			fputc(*v, o);
	}
	fputc('"', o);
}

/* The caller's "k=v k2=v2": each value quoted as needed (a value runs to the next " key="). */
static void put_pairs(FILE *o, const char *kv)
{
	while (*kv) {
		const char *eq = strchr(kv, '='), *next;
		char v[1024];
		size_t n;

		if (!eq)
			break;
		/* The next pair starts at a space, then a key (no space) and '='. */
		for (next = eq + 1; (next = strchr(next, ' ')) != NULL; next++) {
			const char *k = next + 1;
			size_t klen = strcspn(k, "= ");

			if (klen && k[klen] == '=')
				break;
		}
		n = (size_t)((next ? next : eq + strlen(eq)) - (eq + 1));
		if (n >= sizeof(v))
			n = sizeof(v) - 1;
		memcpy(v, eq + 1, n);
		v[n] = '\0';
		fprintf(o, " %.*s=", (int)(eq - kv), kv);
		put_value(o, v);
		kv = next ? next + 1 : eq + 1 + strlen(eq + 1);
	}
}

void alog(enum log_level l, const char *msg, const char *kv, ...)
{
	struct timespec ts;
	struct tm tm;
	char pairs[2048];
	va_list ap;

	if (l > level)
		return;
	va_start(ap, kv);
	vsnprintf(pairs, sizeof(pairs), kv, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	pthread_mutex_lock(&lock);
	fprintf(stderr, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=", tm.tm_year + 1900,
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[l]);
	put_value(stderr, msg);
	put_pairs(stderr, pairs);
	fputc('\n', stderr);
	pthread_mutex_unlock(&lock);
}
