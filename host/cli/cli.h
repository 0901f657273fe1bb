/*
 * The `anvil` command: shared state and the subcommand table.
 *
 * Each subcommand lives in its own cmd_<name>.c and has the signature
 *     int cmd_<name>(cli_globals *g, int argc, char **argv);
 * where argv[0] is the subcommand name. It returns the process exit code:
 * 0 success, 1 failure (message already printed on stderr), 2 usage error.
 * `--help` anywhere prints the command's usage on stdout and returns 0.
 */
#ifndef ANVIL_CLI_H
#define ANVIL_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "anvil/anvil.h"

typedef struct cli_globals {
    const char *config_path; /* --config, or NULL */
    anvil_ctx *ctx;          /* opened on first use by cli_ctx() */
} cli_globals;

/* The context for this run (opened on first call from --config /
 * ANVIL_CONFIG / the default). NULL after printing the error. */
anvil_ctx *cli_ctx(cli_globals *g);

/* Print "anvil <cmd>: <message>" on stderr; returns 1. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print an anvil_error as "anvil <cmd>: <message> (<status name>)"; returns 1. */
int cli_fail_err(const char *cmd, const anvil_error *err);
/* True when argv has --help or -h. */
int cli_wants_help(int argc, char **argv);

/* Read a whole file into memory / write atomically (temp + rename). */
int cli_read_file(const char *path, void **data, size_t *size, anvil_error *err);
int cli_write_file_atomic(const char *path, const void *data, size_t size, anvil_error *err);

/* Parse a byte size like "2G", "500M", "123456". Returns 0 on success. */
int cli_parse_size(const char *s, unsigned long long *out);

/* JSON string escaping to f. */
void cli_json_string(FILE *f, const char *s);

/* Subcommands. */
int cmd_plugins(cli_globals *g, int argc, char **argv);
int cmd_codec(cli_globals *g, int argc, char **argv);
int cmd_bench(cli_globals *g, int argc, char **argv);
int cmd_inspect(cli_globals *g, int argc, char **argv);
int cmd_reemit(cli_globals *g, int argc, char **argv);
int cmd_split(cli_globals *g, int argc, char **argv);
int cmd_merge(cli_globals *g, int argc, char **argv);
int cmd_transcode(cli_globals *g, int argc, char **argv);
int cmd_merge_lora(cli_globals *g, int argc, char **argv);
int cmd_quantize(cli_globals *g, int argc, char **argv);

/* safetensors side of inspect/reemit (cli/safetensors_cmds.c); the GGUF
 * commands call these when the content is not GGUF. */
int cli_inspect_safetensors(cli_globals *g, const char *path, int json);
int cli_reemit_safetensors(cli_globals *g, const char *in, const char *out);

#endif
