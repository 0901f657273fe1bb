/* SPDX-License-Identifier: MIT */
/* Internal: the transcode plan shared by transcode_plan.c (deciding and
 * laying out) and transcode_run.c (streaming the bytes). */
#ifndef ANVIL_HOST_TRANSCODE_INTERNAL_H
#define ANVIL_HOST_TRANSCODE_INTERNAL_H

#include "anvil/transcode.h"
#include "ecma_regex.h"

typedef struct tc_rule {
    char *pattern;
    ecma_re *re; /* ECMAScript, as llama.cpp's --tensor-type */
    uint32_t type;
    char *label; /* "--tensor-type <pattern>" */
    size_t hits; /* tensors it matched */
} tc_rule;

typedef struct anvil_transcode anvil_transcode;
/* The metadata of output part `part` (the policy's): called once per part
 * on a fresh writer, before the tensors are declared. */
typedef int (*tc_kv_fn)(anvil_transcode *t, anvil_gguf_writer *w, uint32_t part, anvil_error *err);

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
    /* What differs between policies. */
    tc_kv_fn build_kvs;
    void *policy; /* the policy's own state, freed with policy_free */
    void (*policy_free)(void *policy);
    int check_kept; /* copied float tensors must be finite (llama.cpp validates them) */
    /* The policy's check of a source tensor's data before it is copied or
     * converted (NULL: none). */
    int (*check_src)(const anvil_transcode_tensor *it, const uint8_t *data, anvil_error *err);
    char **warnings;
    size_t n_warnings;
};

/* Transcode writes a split set (--split-max-size or --split-max-tensors). */
static inline int tc_is_split(const anvil_transcode *t) {
    return t->opts.split_max_bytes > 0 || t->opts.split_max_tensors > 0;
}

/* transcode_plan.c: what every policy shares. */
/* A plan with nothing decided yet. */
anvil_transcode *tc_new(anvil_ctx *ctx, const anvil_gguf *src);
/* it->dst_bytes from it->dst_type and the source's shape. */
int tc_item_bytes(anvil_transcode *t, anvil_transcode_tensor *it, anvil_error *err);
/* t->part_paths for n_parts: one part is out_path itself; a set is
 * "<prefix>-%05u-of-%05u.gguf". */
int tc_part_paths(anvil_transcode *t, const char *out_path, const char *prefix, anvil_error *err);
/* Declare every part (KVs from build_kvs, then its tensors), fill the summary. */
int tc_layout(anvil_transcode *t, anvil_error *err);
/* The output type holding the most elements (ties: the lower id). */
uint32_t tc_dominant_type(const anvil_transcode *t);
/* The bytes of source tensor g: its mapping, or, when the source is not a
 * file (gguf_source.h: a Hugging Face folder converted on demand), filled
 * into *buf (grown to fit; *cap its size, kept across calls). */
int tc_src_data(const anvil_transcode *t, const anvil_gguf_tensor *g, uint8_t **buf, uint64_t *cap,
                const uint8_t **data, anvil_error *err);
/* Record a warning (printf-style). */
int tc_warn(anvil_transcode *t, anvil_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* transcode_rules.c: below the policies and the plan. */
/* Compile rules[0..n) into t->rules (label "<option> <pattern>"). */
int tc_compile_rules(anvil_transcode *t, const anvil_transcode_rule *rules, size_t n, const char *option,
                     anvil_error *err);
/* 1 and *index of the first rule matching name, 0 when none does, -2 (an
 * error) when the search gives up. */
int tc_match_rule(anvil_transcode *t, const char *name, size_t *index, anvil_error *err);

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
int tc_decide(anvil_transcode *t, anvil_ctx *ctx, const anvil_gguf_tensor *src, anvil_transcode_tensor *item,
              anvil_error *err);

#endif
