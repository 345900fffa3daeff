/* SPDX-License-Identifier: MIT */
/*
 * pybpfprof: command line. The first word picks the subcommand (top, dump,
 * convert, diff, agent), each in a file of its own; without one,
 * `pybpfprof [record options] [-- cmd ...]` samples (record.c).
 */
#include <argp.h>
#include <stdio.h>
#include <string.h>

#include "cli/agentcmd.h"
#include "cli/convertcmd.h"
#include "cli/diff.h"
#include "cli/dumpcmd.h"
#include "cli/record.h"
#include "cli/top.h"
#include "core/errors.h"
#include "core/version.h"

const char *argp_program_version = "pybpfprof " PBP_VERSION;
const char *argp_program_bug_address = "the project's issue tracker";

int main(int argc, char **argv)
{
	argp_err_exit_status = EXIT_USAGE;
	if (argc > 1 && strcmp(argv[1], "convert") == 0) {
		argv[1] = "pybpfprof convert";
		return convert_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "diff") == 0) {
		argv[1] = "pybpfprof diff";
		return diff_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "dump") == 0) {
		argv[1] = "pybpfprof dump";
		return dump_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "top") == 0) {
		argv[1] = "pybpfprof top";
		return top_main(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "agent") == 0) {
		argv[1] = "pybpfprof agent";
		return agent_main(argc - 1, argv + 1);
	}
	/*
	 * A bare first word is a subcommand or a typo of one ("dumpp"): a
	 * command to profile comes after "--", which starts with '-'.
	 */
	if (argc > 1 && argv[1][0] != '-') {
		fprintf(stderr, "pybpfprof: unknown subcommand '%s' (top, dump, convert, diff or agent; a command to "
			"profile goes after --)\n", argv[1]);
		return EXIT_USAGE;
	}
	return record_main(argc, argv);
}
