/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_TOP_H
#define PBP_CLI_TOP_H

/* `pybpfprof top [options] [-p PID | -a | -- command]`: the live view; the exit code. */
int top_main(int argc, char **argv);

#endif /* PBP_CLI_TOP_H */
