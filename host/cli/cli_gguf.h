/* SPDX-License-Identifier: MIT */
/* Helpers shared by the GGUF subcommands (inspect, reemit, split, merge). */
#ifndef ANVIL_CLI_GGUF_H
#define ANVIL_CLI_GGUF_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "anvil/gguf.h"
#include "cli.h"

typedef enum cli_sniff {
    CLI_SNIFF_UNKNOWN = 0, /* unreadable or neither: the GGUF reader says why */
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

/* One file a command wrote (or, with --dry-run, would write). */
/* bytes of an output that is not a regular file (a device, a FIFO,
 * standard output): nothing to stat afterwards; null in JSON. */
#define CLI_BYTES_UNKNOWN ULLONG_MAX

typedef struct cli_written {
    const char *path;
    unsigned long long bytes; /* or CLI_BYTES_UNKNOWN */
    size_t tensors;
} cli_written;

/* The parts of a split set as `anvil split` cuts and names them. */
typedef struct cli_split_parts {
    uint32_t n;
    cli_written *written; /* n: path, size, tensor count (malloc'd) */
    char (*paths)[4200];  /* the paths written[] points to (malloc'd) */
} cli_split_parts;

/* Plan splitting src with opts (gguf-split's rule: anvil_gguf_split_plan)
 * into "<prefix>-0000i-of-0000N.gguf": *s gets every part's path, tensor
 * count and size. cli_split_write also writes the set, committed as one
 * step (an existing set is replaced whole or not at all). On failure *s is
 * empty. Free with cli_split_parts_free. */
int cli_split_plan(const anvil_gguf *src, const anvil_gguf_write_options *opts, const char *prefix,
                   const anvil_ctx *ctx, cli_split_parts *s, anvil_error *err);
int cli_split_write(const anvil_gguf *src, const anvil_gguf_write_options *opts, const char *prefix,
                    const anvil_ctx *ctx, cli_split_parts *s, anvil_error *err);
void cli_split_parts_free(cli_split_parts *s);

/* What reemit, split and merge report: text on stdout, or the JSON document
 * {"schema_version":1,"command":cmd,"input":...,"format":...,"n_tensors":n,
 *  "dry_run":...,"replaced_input":...,"outputs":[{"path","bytes","n_tensors"}]}. */
void cli_report_written(const char *cmd, int json, const char *input, const char *format, size_t n_tensors,
                        const cli_written *out, size_t n_out, int dry_run, int replaced_input);

/* cli_report_written for the one GGUF file `out` a command wrote (read back
 * for its size and tensor count). */
void cli_report_gguf_output(const char *cmd, int json, const char *input, const char *out, int replaced_input,
                            const anvil_ctx *ctx, size_t streamed_tensors);

/* A scalar GGUF value (not an array): TEXT quotes strings and escapes them
 * (cut after str_max bytes), RAW prints string bytes as they are (stdout is
 * guarded), JSON prints JSON. */
typedef enum cli_value_style { CLI_VALUE_TEXT, CLI_VALUE_RAW, CLI_VALUE_JSON } cli_value_style;
void cli_gguf_scalar(FILE *f, const anvil_gguf_value *v, cli_value_style style, size_t str_max);

/* The first n elements of an array, separated by ", " (",": JSON), without
 * the brackets. */
void cli_gguf_array(FILE *f, const anvil_gguf_array *a, uint64_t n, cli_value_style style, size_t str_max);

/* An anvil_gguf_progress_fn reporting to the cli_progress at arg. */
void cli_gguf_progress(void *arg, const anvil_gguf_progress *p);

/* An anvil_transcode_progress_fn reporting to the cli_progress at arg
 * (transcode and merge-lora). */
struct anvil_transcode_progress;
void cli_transcode_progress(void *arg, const struct anvil_transcode_progress *p);

/* Options every writing GGUF command takes: --json, --progress, --quiet. */
typedef struct cli_write_flags {
    int json, progress, quiet;
} cli_write_flags;
/* Write options whose progress goes to p, as the flags say. */
void cli_gguf_write_options(const cli_write_flags *f, cli_progress *p, anvil_gguf_write_options *o);
/* A whole-file GGUF rewrite from in to out (anvil_gguf_merge_ex,
 * anvil_gguf_reemit_ex). */
typedef int (*cli_gguf_rewrite_fn)(const char *in, const char *out, const anvil_ctx *ctx,
                                   const anvil_gguf_write_options *opts, anvil_error *err);
/* Run fn as command cmd with the flags' progress, then report what was
 * written (replaced_input: out is in). Returns the exit code. */
int cli_gguf_rewrite(cli_globals *g, const char *cmd, cli_gguf_rewrite_fn fn, const char *in, const char *out,
                     const cli_write_flags *f, int replaced_input);
/* 1 when argv[i] is one of them (and notes it), else 0. */
int cli_write_flag(const char *arg, cli_write_flags *f);
/* argv of a command taking exactly two paths (named in_name, out_name) and
 * the write flags. Returns 0, or 2 after a usage error. */
int cli_parse_in_out(const char *cmd, int argc, char **argv, const char *in_name, const char *out_name,
                     cli_write_flags *f, const char **in, const char **out);

#endif
