/* Internal: the transcode plan shared by transcode_plan.c (deciding and
 * laying out) and transcode_run.c (streaming the bytes). */
#ifndef ANVIL_HOST_TRANSCODE_INTERNAL_H
#define ANVIL_HOST_TRANSCODE_INTERNAL_H

#include <regex.h>

#include "anvil/transcode.h"

typedef struct tc_rule {
    char *pattern;
    regex_t re;
    int compiled;
    uint32_t type;
    char *label;             /* "--tensor-type <pattern>" */
} tc_rule;

struct anvil_transcode {
    anvil_ctx *ctx;
    const anvil_gguf *src;
    anvil_transcode_options opts;
    tc_rule *rules;
    size_t n_rules;
    anvil_transcode_tensor *items;
    size_t n_items;
    anvil_gguf_writer **writers; /* one per output part, fully declared */
    char **part_paths;
    uint32_t n_parts;
    anvil_transcode_summary summary;
    anvil_transcode_quality *quality; /* after the run */
    size_t n_quality;
    int ran;
};

/* transcode_policy.c */
/* ggml_n_dims: dims up to the last one that is not 1 (at least 1). */
uint32_t tc_effective_dims(const anvil_gguf_tensor *t);
/* 1 when the policy lets the tensor change type. */
int tc_is_matrix_weight(const anvil_gguf_tensor *t);
/* 1 for F32, F16, BF16. */
int tc_is_float_type(uint32_t type);
/* Check that a target type can be encoded; a message says why not. */
int tc_check_target(anvil_ctx *ctx, uint32_t type, const char *option, anvil_error *err);
/* Decide one tensor (fills want_type, rule, why, dst_type). */
void tc_decide(const anvil_transcode *t, anvil_ctx *ctx, const anvil_gguf_tensor *src,
               anvil_transcode_tensor *item);

#endif
