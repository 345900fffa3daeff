/* SPDX-License-Identifier: MIT */
#ifndef PBP_CLI_DIFF_H
#define PBP_CLI_DIFF_H

/* `pybpfprof diff BEFORE AFTER [-o OUT]`: the exit code. */
int diff_main(int argc, char **argv);

#endif /* PBP_CLI_DIFF_H */
