/* Helpers shared by the GGUF subcommands (inspect, reemit, split, merge). */
#ifndef ANVIL_CLI_GGUF_H
#define ANVIL_CLI_GGUF_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

typedef enum cli_sniff {
    CLI_SNIFF_UNKNOWN = 0,   /* unreadable or neither: the GGUF reader says why */
    CLI_SNIFF_GGUF,
    CLI_SNIFF_SAFETENSORS
} cli_sniff;

/* What a file holds, judged by its first bytes (not its name). */
cli_sniff cli_gguf_sniff(const char *path);

/* Run op without a context first (built-in ggml types need none, so a
 * broken or absent configuration does not get in the way); when it fails on
 * a tensor type id, run it again with the configured context, whose plugins
 * may provide third-party types. */
typedef int (*cli_gguf_op)(const anvil_ctx *ctx, void *arg, anvil_error *err);
int cli_gguf_run(cli_globals *g, cli_gguf_op op, void *arg, anvil_error *err);

/* A JSON string from bytes that may hold NULs or invalid UTF-8 (replaced by
 * U+FFFD), so the output is always valid JSON. */
void cli_gguf_json_bytes(FILE *f, const char *p, size_t len);

#endif
