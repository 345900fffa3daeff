/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_SERVICE_H
#define PBP_AGENT_SERVICE_H

#include <stddef.h>
#include <sys/types.h>

struct cgroup_info;
struct proc_meta;

/*
 * The service a process belongs to and its Kubernetes names: the labels a
 * fleet's profile store groups by. The name comes from a template of
 * {namespace} {pod} {container} {container_id} {comm} {script} {pid};
 * the default is "{namespace}/{container}" for a process in a Kubernetes
 * pod (names from its runtime's OCI bundle), else "{script}".
 */
#define SERVICE_DEFAULT_KUBE "{namespace}/{container}"
#define SERVICE_DEFAULT_HOST "{script}"

struct services;

/* template NULL: the defaults; host_root: where the node's /run is ("/" on the host). */
struct services *services_new(const char *template, const char *host_root, const char *node);
void services_free(struct services *s);
/* An unknown {placeholder} in the template: its text, else NULL. */
const char *services_bad_placeholder(const char *template);
/* Add the service, Kubernetes names and node to m (strings stay valid until the next call). */
void services_describe(struct services *s, pid_t pid, const struct cgroup_info *cg, struct proc_meta *m);

/*
 * What a service is called after the script it runs, from its argv as
 * /proc/PID/cmdline has it (n bytes, NUL-separated): "python3 /srv/app.py"
 * -> "app", "python3 -m pkg.mod" -> "pkg.mod"; "" when the command names
 * no script (-c, an interactive interpreter).
 */
void service_script(const char *argv, size_t n, char *out, size_t len);
/* pid's script name as service_script() finds it, else (-c, an interactive interpreter) its command name. */
void service_script_of(pid_t pid, char *out, size_t len);
/* Keep [A-Za-z0-9_.-/] (what Pyroscope takes in a service name), the rest becomes '_'; "" -> "unknown". */
void service_sanitize(char *name);

#endif /* PBP_AGENT_SERVICE_H */
