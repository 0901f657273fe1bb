/* SPDX-License-Identifier: MIT */
/*
 * cli_outcheck: the one rule every writing command applies to its output
 * path before it opens anything: OUT is none of the run's inputs (a GGUF or
 * safetensors file, an importance matrix, or any file a Hugging Face
 * folder's conversion reads). The library decides (anvil_output_check,
 * anvil_hf_output_check); this file turns a refusal into the command's
 * error (exit 1) naming both paths.
 */
#include <stddef.h>

#include "anvil/hf.h"
#include "cli.h"

int cli_output_not_input(const char *cmd, const char *out, const char *in, const char *const *more, size_t n_more) {
    anvil_error err = { 0 };
    int rc = ANVIL_OK;
    if (out == NULL) return 0;
    if (in != NULL && cli_is_dir(in)) rc = anvil_hf_output_check(in, out, &err);
    else if (in != NULL) rc = anvil_output_check(out, &in, 1, &err);
    if (rc == ANVIL_OK && n_more > 0) rc = anvil_output_check(out, more, n_more, &err);
    return rc == ANVIL_OK ? 0 : cli_fail_err(cmd, &err);
}
