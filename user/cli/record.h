/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_RECORD_H
#define PBP_CLI_RECORD_H

/* The sampling command: `pybpfprof [options] [-p PID | -a | -- command]`; the exit code. */
int record_main(int argc, char **argv);

#endif /* PBP_CLI_RECORD_H */
