/* SPDX-License-Identifier: MIT */
/* The transcode report, shared by `anvil transcode` and `anvil merge-lora`
 * (both in cmd_transcode.c / cmd_merge_lora.c). */
#ifndef ANVIL_CLI_CMD_TRANSCODE_H
#define ANVIL_CLI_CMD_TRANSCODE_H

#include <stdint.h>
#include <stdio.h>

#include "anvil/transcode.h"

/* ggml's reference encoders against anvil's on the same rows, one thread each. */
typedef struct cli_vs_ggml {
    int ran;
    size_t tensors, mismatched; /* tensors timed; of which bytes differed */
    uint64_t elements, src_bytes;
    double ggml_mb_per_s, anvil_mb_per_s; /* source bytes of the timed rows per second */
    char note[2200];
} cli_vs_ggml;

/* What a report shows besides the plan: the context that made it (so a type
 * a plugin defines is named: ptqtp2, ...), the input's name, and the
 * optional --vs-ggml and --compare results (NULL: none). */
struct cli_compare;
typedef struct cli_report {
    const anvil_ctx *ctx;
    const char *input;
    int dry_run;
    const cli_vs_ggml *cmp;
    const struct cli_compare *compare;
} cli_report;

/* Human report: the plan (dry_run) or the run's outcome. */
void cli_transcode_report(FILE *f, const anvil_transcode *t, const cli_report *r);
/* The same as one JSON object. */
void cli_transcode_json(FILE *f, const anvil_transcode *t, const cli_report *r);

#endif
