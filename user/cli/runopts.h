/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_RUNOPTS_H
#define PBP_CLI_RUNOPTS_H

#include <argp.h>

/*
 * The options every sampling command shares (which processes: -p, -a's
 * filters; how: -m, -F, -d, --verbose), parsed into the struct session_opts given
 * as input: a child of the recording command's argp and of the agent's. Its
 * parent sets st->child_inputs[0] = st->input at ARGP_KEY_INIT.
 */
extern const struct argp runopts_argp;

struct session_opts;
/*
 * At the parent's ARGP_KEY_END, once the command (r->cmd) is known: one of
 * -p, -a or a command, and who is followed (--subprocesses and its opposite).
 */
void runopts_end_targets(struct argp_state *st, struct session_opts *r);

#endif /* PBP_CLI_RUNOPTS_H */
