/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_CGROUP_H
#define PBP_PROC_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a process runs, from /proc/PID/cgroup; "" for what is not known. */
struct cgroup_info {
	char path[512];         /* the v2 path, else the v1 line's (name=systemd, cpu, memory); cut to fit */
	char container_id[65];  /* 64 lower-case hex digits, the outermost container */
	char pod_uid[37];       /* Kubernetes pod UID, with dashes (32 hex for static pods) */
	char runtime[16];       /* "docker", "containerd", "cri-o", "podman" */
};

/*
 * Parse the file's text (len bytes, NUL-terminated or not). Of its lines the
 * one that tells most (a container, then a pod, then a non-root path) wins,
 * ties going to v2, name=systemd, cpu, memory in that order; every field
 * comes from that one line. Malformed lines are skipped. 0, or
 * -PBP_E_CORRUPT when no line parsed (out is zeroed either way first).
 */
int cgroup_parse(const char *text, size_t len, struct cgroup_info *out);
/* Read and parse /proc/PID/cgroup: 0 or -PBP_E_NOENT / _PERM / _NOMEM / _GONE. */
int cgroup_read(pid_t pid, struct cgroup_info *out);
/*
 * As cgroup_read, and a hash of the file's bytes in *hash: the agent keeps
 * it with a process's labels, and cgroup_hash (one read, no parse) tells
 * later whether the process was moved to another cgroup since.
 */
int cgroup_read_hashed(pid_t pid, struct cgroup_info *out, uint64_t *hash);
int cgroup_hash(pid_t pid, uint64_t *hash);

#endif /* PBP_PROC_CGROUP_H */
