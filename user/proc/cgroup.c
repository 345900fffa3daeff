/* SPDX-License-Identifier: MIT */
/*
 * Which cgroup, container and Kubernetes pod a process is in, from
 * /proc/PID/cgroup. The text is untrusted in the sense that matters here:
 * any length, any bytes (cgroup names are chosen by whoever creates them),
 * so every copy is bounded and nothing assumes NUL termination.
 *
 * Each line is "HIERARCHY-ID:CONTROLLERS:PATH". cgroup v2 has one line,
 * "0::PATH"; v1 has one per hierarchy ("4:memory:/docker/<id>",
 * "1:name=systemd:/..."); hybrid systems have both. One line is chosen (see
 * line_better) and path, container and pod all come from that line, so they
 * never describe two different cgroups.
 *
 * Container runtimes name their cgroups (the facts this file relies on):
 *   systemd driver   .../docker-<id>.scope, cri-containerd-<id>.scope,
 *                    crio-<id>.scope, libpod-<id>.scope, nerdctl-<id>.scope,
 *                    under kubepods[-QOS]-pod<uid with _ for ->.slice for pods
 *   cgroupfs driver  /kubepods[/QOS]/pod<uid>/<id>, /docker/<id>,
 *                    /<containerd namespace>/<id>, .../crio-<id>
 * where <id> is 64 lower-case hex digits. A path may go on below the
 * container (systemd in a container: .../<id>/init.scope), and a reader in
 * another cgroup namespace sees "/../.." in front: components are matched
 * wherever they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/cgroup.h"
#include "core/errors.h"

#define CG_ID_LEN 64

/* A counted string: lines and components are slices of the input, not C strings. */
struct span {
	const char *p;
	size_t n;
};

/* What one line says. */
struct cg_line {
	struct span path;
	int rank;               /* which hierarchy: lower is preferred (line_rank) */
	int score;              /* how much it told (SCORE_*) */
	char container_id[CG_ID_LEN + 1];
	char pod_uid[37];
	const char *runtime;
};

enum { SCORE_ROOT, SCORE_PATH, SCORE_POD, SCORE_CONTAINER };

static bool span_starts(struct span s, const char *pre)
{
	size_t n = strlen(pre);

	return s.n >= n && memcmp(s.p, pre, n) == 0;
}

static bool span_ends(struct span s, const char *suf)
{
	size_t n = strlen(suf);

	return s.n >= n && memcmp(s.p + s.n - n, suf, n) == 0;
}

static bool span_eq(struct span s, const char *str)
{
	return s.n == strlen(str) && memcmp(s.p, str, s.n) == 0;
}

static bool is_lhex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Runtimes write ids in lower case only: upper case is someone else's name. */
static bool all_lhex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_lhex(p[i]))
			return false;
	return true;
}

/*
 * A pod UID: a UUID (8-4-4-4-12) for API pods, or 32 hex digits for static
 * pods, whose UID the kubelet hashes from the manifest. sep is the dash as
 * written ('_' in systemd slice names, where '-' separates the levels).
 */
static bool pod_uid_take(struct span s, char sep, char out[37])
{
	char uid[37];

	if (s.n == 32 && all_lhex(s.p, s.n)) {
		memcpy(out, s.p, 32);
		out[32] = '\0';
		return true;
	}
	if (s.n != 36)
		return false;
	/* into uid first: out stays "" (not found) if a later character fails */
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s.p[i] != sep : !is_lhex(s.p[i]))
			return false;
		uid[i] = dash ? '-' : s.p[i];
	}
	uid[36] = '\0';
	memcpy(out, uid, sizeof(uid));
	return true;
}

/* "kubepods-burstable-pod<uid>.slice", "kubepods-pod<uid>.slice" (systemd driver). */
static bool pod_from_slice(struct span c, char out[37])
{
	struct span uid;
	size_t i;

	if (!span_starts(c, "kubepods") || !span_ends(c, ".slice"))
		return false;
	/* the UID holds no '-' here, so the last "-pod" starts it */
	for (i = c.n - strlen(".slice"); i >= 4; i--)
		if (memcmp(c.p + i - 4, "-pod", 4) == 0)
			break;
	if (i < 4)
		return false;
	uid.p = c.p + i;
	uid.n = c.n - strlen(".slice") - i;
	return pod_uid_take(uid, '_', out);
}

/* "pod<uid>" below a kubepods cgroup (cgroupfs driver). */
static bool pod_from_dir(struct span c, char out[37])
{
	if (!span_starts(c, "pod"))
		return false;
	return pod_uid_take((struct span){ c.p + 3, c.n - 3 }, '-', out);
}

/* Prefixes of container cgroups and the runtime each one means. */
static const struct {
	const char *prefix, *runtime;
} cg_prefixes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "nerdctl-", "containerd" },
	{ "crio-", "cri-o" },           /* "crio-conmon-<id>" is the monitor: no match */
	{ "libpod-", "podman" },        /* likewise "libpod-conmon-<id>" */
};

/*
 * Bare ids (cgroupfs driver) say nothing of the runtime, except through
 * their parent: Docker's "/docker", containerd's namespace directories.
 * Under kubepods any CRI runtime may have made it: left unknown.
 */
static const char *runtime_of_parent(struct span parent)
{
	if (span_eq(parent, "docker"))
		return "docker";
	if (span_eq(parent, "libpod_parent"))
		return "podman";
	if (span_eq(parent, "default") || span_eq(parent, "k8s.io"))
		return "containerd";
	return "";
}

/* A container id in one component: "<prefix><id>[.scope]" or a bare "<id>". */
static bool container_from(struct span c, struct span parent, struct cg_line *l)
{
	struct span id = c;

	if (span_ends(id, ".scope"))
		id.n -= strlen(".scope");
	for (size_t i = 0; i < sizeof(cg_prefixes) / sizeof(cg_prefixes[0]); i++) {
		size_t pn = strlen(cg_prefixes[i].prefix);

		if (id.n == pn + CG_ID_LEN && span_starts(id, cg_prefixes[i].prefix) &&
		    all_lhex(id.p + pn, CG_ID_LEN)) {
			memcpy(l->container_id, id.p + pn, CG_ID_LEN);
			l->container_id[CG_ID_LEN] = '\0';
			l->runtime = cg_prefixes[i].runtime;
			return true;
		}
	}
	if (c.n == CG_ID_LEN && all_lhex(c.p, CG_ID_LEN)) {
		memcpy(l->container_id, c.p, CG_ID_LEN);
		l->container_id[CG_ID_LEN] = '\0';
		l->runtime = runtime_of_parent(parent);
		return true;
	}
	return false;
}

/*
 * Walk the path's components. The outermost container wins: with Docker in
 * Docker (or in a pod) that is the one the host's runtime and kubelet know,
 * which is what a host-wide profiler is asked to filter by.
 */
static void path_scan(struct cg_line *l)
{
	struct span parent = { "", 0 };
	const char *p = l->path.p, *end = p + l->path.n;
	bool kube = false;

	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		struct span c = { p, (size_t)((slash ? slash : end) - p) };

		p = slash ? slash + 1 : end;
		if (c.n == 0)
			continue;
		if (span_starts(c, "kubepods")) {
			kube = true;
			if (!l->pod_uid[0])
				pod_from_slice(c, l->pod_uid);
		} else if (kube && !l->pod_uid[0]) {
			/* only below kubepods: elsewhere "pod..." is anybody's name */
			pod_from_dir(c, l->pod_uid);
		}
		if (!l->container_id[0])
			container_from(c, parent, l);
		parent = c;
	}
	if (l->container_id[0])
		l->score = SCORE_CONTAINER;
	else if (l->pod_uid[0])
		l->score = SCORE_POD;
	else
		l->score = span_eq(l->path, "/") ? SCORE_ROOT : SCORE_PATH;
}

/* Does the comma-separated controller list hold this controller? */
static bool has_controller(struct span ctl, const char *name)
{
	const char *p = ctl.p, *end = ctl.p + ctl.n;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		struct span c = { p, (size_t)((comma ? comma : end) - p) };

		if (span_eq(c, name))
			return true;
		p = comma ? comma + 1 : end;
	}
	return false;
}

/*
 * Preference between hierarchies when lines tell as much: v2, then the ones
 * that follow systemd's units (name=systemd) or that every runtime sets up
 * (cpu, memory). A fixed order so one process always gets the same answer.
 */
static int line_rank(unsigned long hier, struct span ctl)
{
	if (hier == 0 && ctl.n == 0)
		return 0;
	if (has_controller(ctl, "name=systemd"))
		return 1;
	if (has_controller(ctl, "cpu"))
		return 2;
	if (has_controller(ctl, "memory"))
		return 3;
	return 4;
}

/* Split "ID:CONTROLLERS:PATH"; false on a malformed line. */
static bool line_parse(struct span s, struct cg_line *l)
{
	const char *c1, *c2;
	unsigned long hier = 0;
	struct span ctl;

	/* zeroed, so that out holds no stale bytes past the strings' ends */
	memset(l, 0, sizeof(*l));
	if (memchr(s.p, '\0', s.n))
		return false;
	c1 = memchr(s.p, ':', s.n);
	if (!c1 || c1 == s.p || c1 - s.p > 10)
		return false;
	for (const char *d = s.p; d < c1; d++) {
		if (*d < '0' || *d > '9')
			return false;
		hier = hier * 10 + (unsigned long)(*d - '0');
	}
	c2 = memchr(c1 + 1, ':', (size_t)(s.p + s.n - (c1 + 1)));
	if (!c2)
		return false;
	ctl = (struct span){ c1 + 1, (size_t)(c2 - (c1 + 1)) };
	/* the path is the rest: cgroup names may hold ':' themselves */
	l->path = (struct span){ c2 + 1, (size_t)(s.p + s.n - (c2 + 1)) };
	if (l->path.n == 0 || l->path.p[0] != '/')
		return false;
	l->rank = line_rank(hier, ctl);
	l->runtime = "";
	path_scan(l);
	return true;
}

static bool line_better(const struct cg_line *a, const struct cg_line *b)
{
	if (a->score != b->score)
		return a->score > b->score;
	return a->rank < b->rank;
}

/*
 * The best line's findings into out. A path longer than out->path is cut
 * (the ids were taken from the whole of it).
 */
static void line_store(const struct cg_line *l, struct cgroup_info *out)
{
	size_t n = l->path.n < sizeof(out->path) - 1 ? l->path.n : sizeof(out->path) - 1;

	memcpy(out->path, l->path.p, n);
	out->path[n] = '\0';
	memcpy(out->container_id, l->container_id, sizeof(out->container_id));
	memcpy(out->pod_uid, l->pod_uid, sizeof(out->pod_uid));
	snprintf(out->runtime, sizeof(out->runtime), "%s", l->runtime);
}

int cgroup_parse(const char *text, size_t len, struct cgroup_info *out)
{
	struct cg_line best = { .score = -1 }, cur;     /* -1: none yet, any line beats it */
	const char *p, *end;

	memset(out, 0, sizeof(*out));
	if (!text)
		return -PBP_E_CORRUPT;
	p = text;
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct span s = { p, (size_t)((nl ? nl : end) - p) };

		p = nl ? nl + 1 : end;
		if (!line_parse(s, &cur))
			continue;       /* one bad line does not spoil the others */
		if (line_better(&cur, &best))
			best = cur;
	}
	if (best.score < 0)
		return -PBP_E_CORRUPT;
	line_store(&best, out);
	return 0;
}

/* Hundreds of v1 hierarchies with long paths would still fit. */
#define CG_FILE_MAX (64 * 1024)

/* /proc/PID/cgroup missing, or unreadable because the process is gone: "no such process". */
static int errno_err(int e)
{
	return e == ENOENT || e == ESRCH ? -PBP_E_NOENT : pbp_err_from_errno(e, -PBP_E_GONE);
}

/* The file's bytes, hashed (FNV-1a): what changes when the process is moved, told with no parse. */
static uint64_t text_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h;
}

/* out NULL: only the hash. */
static int read_file(pid_t pid, struct cgroup_info *out, uint64_t *hash)
{
	char path[64], *buf;
	size_t len = 0;
	ssize_t r = 1;
	int fd, err = 0;

	if (out)
		memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno_err(errno);
	buf = malloc(CG_FILE_MAX);      /* too big for a thread's stack, and reentrant */
	if (!buf) {
		close(fd);
		return -PBP_E_NOMEM;
	}
	/* procfs hands the file out in pieces: read until EOF */
	while (len < CG_FILE_MAX && r != 0) {
		r = read(fd, buf + len, CG_FILE_MAX - len);
		if (r < 0 && errno != EINTR) {
			err = errno_err(errno);
			break;
		}
		if (r > 0)
			len += (size_t)r;
	}
	close(fd);
	if (!err && hash)
		*hash = text_hash(buf, len);
	/* an exited process's file reads empty */
	if (!err && (out ? cgroup_parse(buf, len, out) != 0 : len == 0))
		err = -PBP_E_GONE;
	free(buf);
	return err;
}

int cgroup_read(pid_t pid, struct cgroup_info *out)
{
	return read_file(pid, out, NULL);
}

int cgroup_read_hashed(pid_t pid, struct cgroup_info *out, uint64_t *hash)
{
	return read_file(pid, out, hash);
}

int cgroup_hash(pid_t pid, uint64_t *hash)
{
	return read_file(pid, NULL, hash);
}
