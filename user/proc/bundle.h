/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_BUNDLE_H
#define PBP_PROC_BUNDLE_H

#include <stddef.h>

/*
 * The Kubernetes names of a container, from the OCI config.json its runtime
 * wrote on the node. "" for what the bundle does not say (a pod sandbox, the
 * pause container, has no container name). Every field is NUL-terminated,
 * valid UTF-8 and cut (at a character boundary) to fit.
 */
struct kube_meta {
	char namespace_[64];    /* Kubernetes namespace ("" unknown) */
	char pod[254];          /* pod name */
	char container[64];     /* container name */
	char pod_uid[37];       /* when the bundle says it */
	char runtime[16];       /* "containerd" or "cri-o": which layout it was found in */
};

/*
 * Parse a config.json text (len bytes, NUL-terminated or not). The keys of
 * the first runtime (containerd, then CRI-O) any of whose keys the
 * annotations hold are read, and out->runtime names that runtime ("" if
 * none: 0 with every field ""). 0, or -PBP_E_CORRUPT when the text is not a
 * JSON object with an "annotations" object. out is zeroed first.
 * Not for two threads at once: cJSON's parser writes a global (the
 * position of its last error) on every call.
 */
int bundle_parse(const char *text, size_t len, struct kube_meta *out);

/*
 * Find and read container_id's bundle under root ("/" on the host, "/host"
 * in a container that mounts the runtimes' state there), trying each
 * runtime's layout. container_id must be 64 lower-case hex digits (what
 * cgroup_parse gives). 0; -PBP_E_NOENT when no runtime has it (or the id is
 * not one); -PBP_E_CORRUPT when its config.json is not a regular file, is
 * reached through a symbolic link, is too large or does not parse;
 * -PBP_E_PERM, -PBP_E_NOMEM, -PBP_E_MFILE. out is zeroed first.
 */
int bundle_read(const char *root, const char *container_id, struct kube_meta *out);

#endif /* PBP_PROC_BUNDLE_H */
