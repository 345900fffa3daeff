/* SPDX-License-Identifier: MIT */
#ifndef PBP_AGGREGATE_ROOTLABEL_H
#define PBP_AGGREGATE_ROOTLABEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Root labels name a process or thread by our id, then, when it lives in
 * another PID namespace, by its own: "thread 5031 (3 in its namespace) worker".
 * root_label() writes "WORD ID[ (NS in its namespace)][ REST]" (ns 0: none);
 * root_label_parse() reads one back: false when label is not WORD and an id.
 * *rest points into label, NULL when nothing follows.
 */
void root_label(char *out, size_t len, const char *word, uint32_t id, uint32_t ns, const char *rest);
bool root_label_parse(const char *label, const char *word, uint32_t *id, uint32_t *ns, const char **rest);

#endif /* PBP_AGGREGATE_ROOTLABEL_H */
