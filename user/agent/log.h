/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGENT_LOG_H
#define PBP_AGENT_LOG_H

#include <stdarg.h>

/*
 * The agent's log: one line per event on stderr, logfmt (key=value, as
 * Kubernetes log pipelines parse it): ts=... level=... msg="..." then the
 * caller's pairs. Lines below the level set are not written.
 */
enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* "error", "warn", "info" or "debug": its level, or -1. */
int log_level_by_name(const char *name);
void log_set_level(enum log_level l);
/* kv: pairs as "key=%s key2=%d" with their values; a %s value is quoted when it needs to be. */
void alog(enum log_level l, const char *msg, const char *kv, ...) __attribute__((format(printf, 3, 4)));

#endif /* PBP_AGENT_LOG_H */
