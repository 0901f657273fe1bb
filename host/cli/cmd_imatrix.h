/* SPDX-License-Identifier: MIT */
/*
 * The sub-commands of `anvil imatrix` (cmd_imatrix.c): convert and merge
 * (cmd_imatrix_files.c), stats (cmd_imatrix_stats.c). argv[0] is the
 * sub-command's name; each returns the process exit code.
 */
#ifndef ANVIL_CLI_CMD_IMATRIX_H
#define ANVIL_CLI_CMD_IMATRIX_H

#include "anvil/imat.h"

int cli_imatrix_convert(int argc, char **argv);
int cli_imatrix_merge(int argc, char **argv);
int cli_imatrix_stats(int argc, char **argv);
/* Warn on stderr about each entry with a matrix never seen (zero count);
 * returns how many entries have no data at all. */
size_t cli_imatrix_warn_empty(const char *cmd, const char *path, const anvil_imat *im);

#endif
