/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_DUMPCMD_H
#define PBP_CLI_DUMPCMD_H

/* `pybpfprof dump`: its options parsed, one process read and printed; the exit code. */
int dump_main(int argc, char **argv);

#endif /* PBP_CLI_DUMPCMD_H */
