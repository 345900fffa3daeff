/* SPDX-License-Identifier: MIT */
/*
 * The Kubernetes names of a container (namespace, pod, container, pod UID)
 * from the OCI bundle its CRI runtime keeps on the node: the runtime writes
 * the pod's identity into config.json's "annotations", so no API server, no
 * CRI socket and no credentials are needed, only read access to the
 * runtime's state directory (through a hostPath mount in a DaemonSet).
 *
 * Where each runtime keeps a container's config.json, and which keys it
 * writes (checked in the runtimes' sources):
 *
 * containerd: ROOT/run/containerd/io.containerd.runtime.v2.task/k8s.io/ID/
 *   config.json. /run/containerd is the default state directory
 *   (defaults/defaults_unix.go, DefaultStateDir); each plugin's state is
 *   filepath.Join(state, plugin URI) (cmd/containerd/server/server.go), the
 *   task plugin being io.containerd.runtime.v2.task; NewBundle in
 *   core/runtime/v2/bundle.go makes STATE/NAMESPACE/ID and writes the spec
 *   there as config.json; k8s.io is the containerd namespace of the CRI
 *   plugin. Keys: pkg/cri/annotations/annotations.go, whose
 *   DefaultCRIAnnotations sets io.kubernetes.cri.sandbox-namespace,
 *   -sandbox-name and -sandbox-uid on every container and
 *   io.kubernetes.cri.container-name on all but the sandbox.
 *
 * CRI-O: ROOT/run/containers/storage/overlay-containers/ID/userdata/
 *   config.json. server/container_create.go (and sandbox_run_linux.go for
 *   the pod's infra container) saves the spec into the container's run
 *   directory, which containers/storage's ContainerRunDirectory (store.go)
 *   makes as RunRoot/DRIVER-containers/ID/userdata, RunRoot being
 *   /run/containers/storage by default (storage.conf), DRIVER overlay.
 *   Keys: CRI-O copies the kubelet's container labels into the annotations
 *   (internal/factory/container/container.go, SpecAddAnnotations), and the
 *   kubelet names them io.kubernetes.pod.namespace, io.kubernetes.pod.name,
 *   io.kubernetes.pod.uid and io.kubernetes.container.name
 *   (k8s.io/kubelet/pkg/types/labels.go). They are added after the pod's
 *   own annotations, so a pod cannot pass itself off as another by
 *   annotating itself with them; it could with containerd's keys, which is
 *   why a bundle is read with its own runtime's keys only.
 *
 * The file is written by the runtime as root, but what matters in it comes
 * from the pod: treated as hostile input (any size, any bytes).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proc/bundle.h"
#include "core/errors.h"
#include "core/file.h"
#include "core/text.h"

/*
 * A pod's annotations are at most 256 KiB in all (apimachinery's
 * TotalAnnotationSizeLimitB); CRI-O writes them twice, once as a JSON
 * string whose escapes can take 6 bytes a byte, and the spec holds the
 * environment and mounts as well: 4 MiB leaves room for that, while a
 * file larger (read once per new container, then parsed into a tree a few
 * times its size) is refused rather than let run the agent out of memory.
 */
#define BUNDLE_FILE_MAX (4u << 20)

#define ID_LEN 64

/* Which key holds which field, for one runtime. */
struct bundle_keys {
	const char *namespace_, *pod, *container, *pod_uid;
};

/* One row per runtime: where its bundles are, and its keys. */
static const struct layout {
	const char *runtime;
	const char *dir;        /* under root, the directory of the ID directories */
	const char *tail;       /* below ID, the path of config.json */
	struct bundle_keys keys;
} layouts[] = {
	{ "containerd", "run/containerd/io.containerd.runtime.v2.task/k8s.io", "config.json",
	  { "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
	    "io.kubernetes.cri.container-name", "io.kubernetes.cri.sandbox-uid" } },
	{ "cri-o", "run/containers/storage/overlay-containers", "userdata/config.json",
	  { "io.kubernetes.pod.namespace", "io.kubernetes.pod.name",
	    "io.kubernetes.container.name", "io.kubernetes.pod.uid" } },
};
#define N_LAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/*
 * src into dst (size bytes), cut before a character that does not fit
 * (never inside one), then made valid UTF-8: the runtime does not check
 * what the pod wrote.
 */
static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size) {
		n = size - 1;
		/* back over continuation bytes to the start of the cut character */
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
	utf8_scrub(dst);
}

/* One annotation's value into dst, if it is there and a string. */
static bool take(const cJSON *ann, const char *key, char *dst, size_t size)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, key));

	if (!v)
		return false;
	copy_cut(dst, size, v);
	return true;
}

/* Every field keys names, from the annotations; whether any was there. */
static bool take_all(const cJSON *ann, const struct bundle_keys *k, struct kube_meta *out)
{
	bool any = false;

	any |= take(ann, k->namespace_, out->namespace_, sizeof(out->namespace_));
	any |= take(ann, k->pod, out->pod, sizeof(out->pod));
	any |= take(ann, k->container, out->container, sizeof(out->container));
	any |= take(ann, k->pod_uid, out->pod_uid, sizeof(out->pod_uid));
	return any;
}

/* The "annotations" object of a config.json text, in *root (to be freed); NULL if none. */
static const cJSON *annotations(const char *text, size_t len, cJSON **root)
{
	const char *end = NULL;
	const cJSON *ann;

	/*
	 * cJSON reads at most len bytes: the text need not be NUL-terminated.
	 * What follows the value must be white space: a file cut short or
	 * with something after it is not what the runtime wrote.
	 */
	*root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!cJSON_IsObject(*root) || !end)
		return NULL;
	for (; end < text + len; end++)
		if (!strchr(" \t\r\n", *end) || !*end)
			return NULL;
	ann = cJSON_GetObjectItemCaseSensitive(*root, "annotations");
	return cJSON_IsObject(ann) ? ann : NULL;
}

/*
 * Parse with one runtime's keys (l), or, l NULL, with those of the first
 * runtime any of whose keys is there.
 */
static int parse_as(const char *text, size_t len, const struct layout *l, struct kube_meta *out)
{
	cJSON *root = NULL;
	const cJSON *ann;
	int err = 0;

	memset(out, 0, sizeof(*out));
	ann = text ? annotations(text, len, &root) : NULL;
	if (!ann) {
		err = -PBP_E_CORRUPT;
	} else if (l) {
		take_all(ann, &l->keys, out);
		snprintf(out->runtime, sizeof(out->runtime), "%s", l->runtime);
	} else {
		for (size_t i = 0; i < N_LAYOUTS; i++) {
			if (take_all(ann, &layouts[i].keys, out)) {
				snprintf(out->runtime, sizeof(out->runtime), "%s", layouts[i].runtime);
				break;
			}
		}
	}
	cJSON_Delete(root);
	return err;
}

int bundle_parse(const char *text, size_t len, struct kube_meta *out)
{
	return parse_as(text, len, NULL, out);
}

/* Runtimes make ids of 64 lower-case hex digits: anything else is no id (nor a path). */
static bool id_valid(const char *id)
{
	size_t i;

	for (i = 0; id[i] && i <= ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return i == ID_LEN && !id[i];
}

/* An open or read that failed: a missing file, or one we may not read (ELOOP: a symbolic link, ENOTDIR, EIO, ...). */
static int errno_err(int e)
{
	return e == ENOENT ? -PBP_E_NOENT : pbp_err_from_errno(e, -PBP_E_CORRUPT);
}

/*
 * Open path (relative, '/'-separated) below dirfd one component at a
 * time, following no symbolic link: the ID directory and what is below it
 * are the runtime's own, and a link there is not something it made.
 * O_NONBLOCK: opening a FIFO for reading does not wait for a writer.
 * The file descriptor, or -PBP_E_* (errno_err).
 */
static int open_nofollow(int dirfd, const char *path)
{
	char comp[ID_LEN + 1];
	int fd = dirfd;

	for (;;) {
		const char *slash = strchr(path, '/');
		size_t n = slash ? (size_t)(slash - path) : strlen(path);
		int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (slash ? O_DIRECTORY : O_NONBLOCK);
		int next;

		if (n == 0 || n >= sizeof(comp)) {
			next = errno_err(ENAMETOOLONG);
		} else {
			memcpy(comp, path, n);
			comp[n] = '\0';
			next = openat(fd, comp, flags);
			if (next < 0)
				next = errno_err(errno);
		}
		if (fd != dirfd)
			close(fd);
		if (next < 0 || !slash)
			return next;
		fd = next;
		path = slash + 1;
	}
}

/* All of fd, a regular file of at most BUNDLE_FILE_MAX bytes, into *buf (malloc'd). */
static int read_small(int fd, char **buf, size_t *len)
{
	int err = file_read_fd(fd, BUNDLE_FILE_MAX, buf, len);

	if (err == -PBP_E_IO)
		return errno_err(errno);
	return err == -PBP_E_INVAL || err == -PBP_E_LIMIT ? -PBP_E_CORRUPT : err;
}

/* id's bundle in one layout under root: 0, -PBP_E_NOENT when it is not there, other errors. */
static int read_layout(const char *root, const char *id, const struct layout *l, struct kube_meta *out)
{
	char path[PATH_MAX];
	char *buf = NULL;
	size_t len = 0;
	int dirfd, fd, err;

	/* root and the runtime's directories are the node's own: symbolic links there are followed */
	if (snprintf(path, sizeof(path), "%s/%s", root, l->dir) >= (int)sizeof(path))
		return -PBP_E_NOENT;
	dirfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	if (dirfd < 0)      /* ENOTDIR: no such runtime here either */
		return errno == ENOTDIR ? -PBP_E_NOENT : errno_err(errno);
	snprintf(path, sizeof(path), "%s/%s", id, l->tail);
	fd = open_nofollow(dirfd, path);
	close(dirfd);
	err = fd < 0 ? fd : read_small(fd, &buf, &len);
	if (fd >= 0)
		close(fd);
	if (!err)
		err = parse_as(buf, len, l, out);
	free(buf);
	return err;
}

int bundle_read(const char *root, const char *container_id, struct kube_meta *out)
{
	int err = -PBP_E_NOENT;

	memset(out, 0, sizeof(*out));
	if (!root || !container_id || !id_valid(container_id))
		return -PBP_E_NOENT;
	/*
	 * A container is in one runtime's state only; where a layout has it but
	 * cannot be read, say why, unless another layout reads.
	 */
	for (size_t i = 0; i < N_LAYOUTS; i++) {
		int e = read_layout(root, container_id, &layouts[i], out);

		if (e == 0)
			return 0;
		if (e != -PBP_E_NOENT && err == -PBP_E_NOENT)
			err = e;
	}
	memset(out, 0, sizeof(*out));
	return err;
}
