/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_CONVERTCMD_H
#define PBP_CLI_CONVERTCMD_H

/* `pybpfprof convert`: its options parsed, a profile read and written again; the exit code. */
int convert_main(int argc, char **argv);

#endif /* PBP_CLI_CONVERTCMD_H */
