/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_AGENTCMD_H
#define PBP_CLI_AGENTCMD_H

/* `pybpfprof agent [options]`: the node agent; its exit code. */
int agent_main(int argc, char **argv);

#endif /* PBP_CLI_AGENTCMD_H */
