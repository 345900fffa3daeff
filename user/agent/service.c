/* SPDX-License-Identifier: MIT */
/*
 * A process's service is worked out when its labels are made: when it is
 * found, after an exec (the same pid, another program) and after a move to
 * another cgroup (session/targets.c: run_labels_hold). Each target keeps
 * its labels, so nothing here is kept for a pid: a cache by pid gave an
 * exec'd process its old program's name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/service.h"
#include "aggregate/aggregate.h"
#include "proc/bundle.h"
#include "proc/cgroup.h"
#include "proc/discover.h"
#include "proc/procfs.h"

#define SERVICE_MAX 128

struct entry {
	pid_t pid;
	char container_id[65];
	struct kube_meta k;
	char service[SERVICE_MAX];
};

struct services {
	const char *template, *host_root, *node;
	struct entry last;      /* the strings services_describe gave */
};

struct services *services_new(const char *template, const char *host_root, const char *node)
{
	struct services *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->template = template;
	s->host_root = host_root ? host_root : "/";
	s->node = node ? node : "";
	return s;
}

void services_free(struct services *s)
{
	free(s);
}

/* The name a script or module gives its service ("" for none). */
static void name_of(const char *tok, bool module, char *out, size_t len)
{
	const char *base = module ? tok : (strrchr(tok, '/') ? strrchr(tok, '/') + 1 : tok);
	size_t n = strlen(base);

	if (!module && n > 3 && strcmp(base + n - 3, ".py") == 0)
		n -= 3;
	snprintf(out, len, "%.*s", (int)n, base);
}

/*
 * python3's single-dash options, clustered as it takes them ("-um mod",
 * "-mmod", "-Wignore"): 'c' ends the search (a command, no script), 'm'
 * names the module (the rest of the cluster or the next word), 'W' and 'X'
 * take an argument likewise. Returns the word that follows as the module
 * (1), to skip (2), or 0.
 */
static int cluster(const char *opt, char *out, size_t len, bool *stop)
{
	for (const char *c = opt + 1; *c; c++) {
		if (*c == 'c') {
			*stop = true;
			return 0;
		}
		if (*c == 'm' || *c == 'W' || *c == 'X') {
			if (c[1] && *c == 'm') {
				name_of(c + 1, true, out, len);
				*stop = true;
				return 0;
			}
			return c[1] ? 0 : *c == 'm' ? 1 : 2;
		}
	}
	return 0;
}

/* The next argument of argv (n bytes, NUL-separated) after *pos, or NULL. */
static const char *next_arg(const char *argv, size_t n, size_t *pos)
{
	const char *a;

	if (*pos >= n)
		return NULL;
	a = argv + *pos;
	*pos += strnlen(a, n - *pos) + 1;
	return a;
}

void service_script(const char *argv, size_t n, char *out, size_t len)
{
	char buf[4096];         /* a terminated copy: the last argument may end without a NUL */
	size_t pos = 0;
	bool stop = false;
	int next = 0;
	const char *tok;

	n = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
	memcpy(buf, argv, n);
	buf[n] = '\0';
	argv = buf;
	tok = next_arg(argv, n, &pos);  /* the interpreter */

	snprintf(out, len, "%s", "");
	while (!stop && tok && (tok = next_arg(argv, n, &pos)) != NULL) {
		if (next == 2) {
			next = 0;
			continue;
		}
		if (next == 1 || tok[0] != '-') {
			name_of(tok, next == 1, out, len);
			return;
		}
		if (strcmp(tok, "-") == 0)
			return;
		if (strcmp(tok, "--check-hash-based-pycs") == 0)
			next = 2;
		else if (tok[1] != '-')
			next = cluster(tok, out, len, &stop);
	}
}

void service_sanitize(char *name)
{
	for (char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("_.-/", *p)))
			*p = '_';
	if (!name[0])
		snprintf(name, SERVICE_MAX, "unknown");
}

/* ------------------------------------------------------------- placeholders */

static void ph_namespace(const struct entry *e, char *out, size_t len)
{
	snprintf(out, len, "%s", e->k.namespace_);
}

static void ph_pod(const struct entry *e, char *out, size_t len)
{
	snprintf(out, len, "%s", e->k.pod);
}

static void ph_container(const struct entry *e, char *out, size_t len)
{
	snprintf(out, len, "%s", e->k.container);
}

static void ph_container_id(const struct entry *e, char *out, size_t len)
{
	snprintf(out, len, "%s", e->container_id);
}

static void ph_pid(const struct entry *e, char *out, size_t len)
{
	snprintf(out, len, "%d", (int)e->pid);
}

static void ph_comm(const struct entry *e, char *out, size_t len)
{
	proc_thread_comm(e->pid, e->pid, out, len);
}

void service_script_of(pid_t pid, char *out, size_t len)
{
	char argv[4096];
	int got = proc_argv(pid, argv, sizeof(argv));

	out[0] = '\0';
	if (got > 0)
		service_script(argv, (size_t)got, out, len);
	if (!out[0])
		proc_thread_comm(pid, pid, out, len);
}

static void ph_script(const struct entry *e, char *out, size_t len)
{
	service_script_of(e->pid, out, len);
}

/* A template's placeholders: one row each. */
static const struct placeholder {
	const char *name;
	void (*value)(const struct entry *e, char *out, size_t len);
} placeholders[] = {
	{ "namespace", ph_namespace },
	{ "pod", ph_pod },
	{ "container", ph_container },
	{ "container_id", ph_container_id },
	{ "comm", ph_comm },
	{ "script", ph_script },
	{ "pid", ph_pid },
};

/* The row of the n-byte name at s, or NULL. */
static const struct placeholder *placeholder_of(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(placeholders) / sizeof(placeholders[0]); i++)
		if (strlen(placeholders[i].name) == n && strncmp(s, placeholders[i].name, n) == 0)
			return &placeholders[i];
	return NULL;
}

const char *services_bad_placeholder(const char *t)
{
	for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
		size_t n = strcspn(p + 1, "}");

		if (p[1 + n] != '}' || !placeholder_of(p + 1, n))
			return p;
	}
	return NULL;
}

static void expand(const struct entry *e, const char *t, char *out, size_t len)
{
	size_t o = 0;

	while (*t && o + 1 < len) {
		const char *close = t[0] == '{' ? strchr(t, '}') : NULL;
		const struct placeholder *ph;
		char v[256];

		if (!close) {
			out[o++] = *t++;
			continue;
		}
		ph = placeholder_of(t + 1, (size_t)(close - t - 1));
		v[0] = '\0';
		if (ph)
			ph->value(e, v, sizeof(v));
		o += (size_t)snprintf(out + o, len - o, "%s", v);
		if (o >= len)
			o = len - 1;
		t = close + 1;
	}
	out[o] = '\0';
}

static void fill(struct services *s, struct entry *e, pid_t pid, const struct cgroup_info *cg)
{
	const char *t = s->template;

	memset(e, 0, sizeof(*e));
	e->pid = pid;
	snprintf(e->container_id, sizeof(e->container_id), "%s", cg->container_id);
	if (cg->container_id[0])
		bundle_read(s->host_root, cg->container_id, &e->k);   /* nothing found: no names */
	if (!t)
		t = e->k.namespace_[0] && e->k.container[0] ? SERVICE_DEFAULT_KUBE : SERVICE_DEFAULT_HOST;
	expand(e, t, e->service, sizeof(e->service));
	service_sanitize(e->service);
}

void services_describe(struct services *s, pid_t pid, const struct cgroup_info *cg, struct proc_meta *m)
{
	struct entry *e = &s->last;

	fill(s, e, pid, cg);
	m->label[PL_SERVICE] = e->service;
	m->label[PL_NAMESPACE] = e->k.namespace_;
	m->label[PL_POD] = e->k.pod;
	m->label[PL_CONTAINER] = e->k.container;
	if (e->k.pod_uid[0] && !(m->label[PL_POD_UID] && m->label[PL_POD_UID][0]))
		m->label[PL_POD_UID] = e->k.pod_uid;
	m->label[PL_NODE] = s->node;
}
