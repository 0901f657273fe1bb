/* SPDX-License-Identifier: MIT */
/* anvil quantize --measure / --calibrate (cmd_quantize_sens.c): a model's
 * per-tensor sensitivity measured on calibration text, as the JSON of
 * docs/SENSITIVITY.md. */
#ifndef ANVIL_CLI_QUANTIZE_SENS_H
#define ANVIL_CLI_QUANTIZE_SENS_H

#include <stddef.h>

#include "anvil/anvil.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"

typedef struct cli_sens_opts {
    size_t chunks; /* at most this many chunks */
    size_t n_ctx;  /* tokens a chunk */
    int progress;  /* one line per tensor on stderr */
} cli_sens_opts;

/* Measure model_path on text_path (im may be NULL); *json is malloc'd.
 * With errs (the candidates' relative errors a target plan measured), the
 * file is version 3 and each tensor errs holds gets its "err" member. */
int cli_sens_measure(anvil_ctx *ctx, const char *model_path, const char *text_path, const anvil_imatrix *im,
                     const cli_sens_opts *o, const anvil_quantize_cache *errs, char **json, size_t *json_len,
                     anvil_error *err);

/* The mean KL divergence on text_path's chunks (as cli_sens_measure cuts
 * them) of each plan's file against the model: every matrix of the forward
 * pass a plan encodes goes through its planned type (with im's row) and
 * back; kld[i] for plans[i]. */
int cli_sens_verify(anvil_ctx *ctx, const char *model_path, const char *text_path, const anvil_imatrix *im,
                    const cli_sens_opts *o, anvil_transcode *const *plans, size_t n_plans, double *kld,
                    anvil_error *err);

#endif
