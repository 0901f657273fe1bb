/* SPDX-License-Identifier: MIT */
/* `anvil transcode --compare`: after a run, the tensors it converted are
 * encoded again in other formats (by default tq1_0 tq2_0 q2_K q3_K iq2_s)
 * and decoded back, so the quality report can set the chosen format's SNR
 * next to what those formats give on the same weights. The pass is the
 * library's (anvil_transcode_quality_as: the run's own chunks, coders,
 * threads and chunk-order sums); this file parses the list and prints. */
#ifndef ANVIL_CLI_TRANSCODE_COMPARE_H
#define ANVIL_CLI_TRANSCODE_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "anvil/anvil.h"
#include "anvil/transcode.h"

#define CLI_COMPARE_MAX_TYPES 8

/* The formats compared by default, comma-separated. */
#define CLI_COMPARE_DEFAULT "tq1_0,tq2_0,q2_K,q3_K,iq2_s"

typedef struct cli_compare {
    size_t n_types;
    uint32_t types[CLI_COMPARE_MAX_TYPES];
    const char *names[CLI_COMPARE_MAX_TYPES];
    double bpw[CLI_COMPARE_MAX_TYPES];
    size_t n_tensors;  /* anvil_transcode_count() of the run */
    double *sse;       /* [tensor * n_types + j]; NAN: not compared (see note) */
    double *signal;    /* [tensor * n_types + j] */
    const char **note; /* [tensor * n_types + j]: why not compared, or NULL */
    double seconds;
} cli_compare;

/* Resolve a comma-separated list of type names. Returns 0, or reports a
 * usage error (cli_usage_error) and returns 2. */
int cli_compare_parse(const anvil_ctx *ctx, const char *list, cli_compare *c);

/* Encode and decode every converted tensor of t in each type of c. */
int cli_compare_run(anvil_transcode *t, cli_compare *c, anvil_error *err);

/* SNR in dB of tensor i in type j: +inf when exact, NAN when not compared. */
double cli_compare_snr(const cli_compare *c, size_t i, size_t j);

/* The comparison as a table (after the quality report), or as the value of
 * a JSON member. */
void cli_compare_print(FILE *f, const cli_compare *c, const anvil_transcode *t, const anvil_ctx *ctx);
void cli_compare_json(FILE *f, const cli_compare *c, const anvil_transcode *t);

void cli_compare_free(cli_compare *c);

#endif
