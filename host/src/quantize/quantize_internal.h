/* SPDX-License-Identifier: MIT */
/* Internal: what the files of host/src/quantize share. llama.cpp's
 * quantization policy (quantize_policy.c: the ftype and category enums, the
 * per-tensor state and type rules), the model's keys as the loader reads
 * them (quantize_plan.c) and the architecture table's checks
 * (quantize_arch.c); used by the plan (quantize_plan.c) and the target-size
 * optimizer (quantize_target.c, its own header quantize_target.h). */
#ifndef ANVIL_HOST_QUANTIZE_INTERNAL_H
#define ANVIL_HOST_QUANTIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/quantize.h"
#include "transcode_internal.h"

#define QZ_MAX_LAYERS 512u /* LLAMA_MAX_LAYERS */

/* LLAMA_FTYPE values the policy names. */
enum {
    QZ_ALL_F32 = 0,
    QZ_F16 = 1,
    QZ_Q4_0 = 2,
    QZ_Q4_1 = 3,
    QZ_Q8_0 = 7,
    QZ_Q5_0 = 8,
    QZ_Q5_1 = 9,
    QZ_Q2_K = 10,
    QZ_Q3_K_S = 11,
    QZ_Q3_K_M = 12,
    QZ_Q3_K_L = 13,
    QZ_Q4_K_S = 14,
    QZ_Q4_K_M = 15,
    QZ_Q5_K_S = 16,
    QZ_Q5_K_M = 17,
    QZ_Q6_K = 18,
    QZ_IQ2_XXS = 19,
    QZ_IQ2_XS = 20,
    QZ_Q2_K_S = 21,
    QZ_IQ3_XS = 22,
    QZ_IQ3_XXS = 23,
    QZ_IQ1_S = 24,
    QZ_IQ4_NL = 25,
    QZ_IQ3_S = 26,
    QZ_IQ3_M = 27,
    QZ_IQ2_S = 28,
    QZ_IQ2_M = 29,
    QZ_IQ4_XS = 30,
    QZ_IQ1_M = 31,
    QZ_BF16 = 32,
    QZ_TQ1_0 = 36,
    QZ_TQ2_0 = 37,
    QZ_MXFP4_MOE = 38,
    QZ_NVFP4 = 39,
    QZ_Q1_0 = 40,
    QZ_Q2_0 = 41,
    QZ_GUESSED = 1024
};

/* The architectures the policy singles out. */
typedef enum qz_arch { QZ_ARCH_OTHER, QZ_ARCH_LLAMA, QZ_ARCH_FALCON, QZ_ARCH_BAILINGMOE3 } qz_arch;

/* What llama.cpp's model loader tells the policy. */
typedef struct qz_model {
    qz_arch arch;
    uint32_t n_layer_all; /* {arch}.block_count */
    uint32_t n_expert;    /* {arch}.expert_count (0 when absent) */
    uint32_t n_gqa;       /* n_head(0) / n_head_kv(0), 0 when n_head_kv is 0 */
    int is_70b;           /* LLM_TYPE_70B */
    int no_layers;        /* n_layer() is 0 (clip): llama.cpp aborts where the rules ask for n_gqa() */
} qz_model;

/* tensor_category in llama-quant.cpp. */
typedef enum qz_category {
    QZ_TOKEN_EMBD,
    QZ_ATTENTION_Q,
    QZ_ATTENTION_V,
    QZ_ATTENTION_K,
    QZ_ATTENTION_QKV,
    QZ_ATTENTION_KV_B,
    QZ_ATTENTION_OUTPUT,
    QZ_FFN_UP,
    QZ_FFN_GATE,
    QZ_FFN_DOWN,
    QZ_OUTPUT,
    QZ_OTHER
} qz_category;

/* quantize_state_impl: the counters that make the mixture depend on layer order. */
typedef struct qz_policy_state {
    qz_model model;
    const anvil_quantize_options *opts;
    uint32_t ftype;
    int n_attention_wv, i_attention_wv;
    int n_ffn_down, n_ffn_gate, n_ffn_up;
    int i_ffn_down, i_ffn_gate, i_ffn_up;
    int n_fallback;
    int has_imatrix;
    int has_tied_embeddings;
} qz_policy_state;

qz_category qz_category_of(const char *name);
/* tensor_allows_quantization. */
int qz_allows_quantization(const anvil_quantize_options *o, const anvil_gguf_tensor *t);
/* The i-quants that search a grid (IQ1_S .. IQ3_S): llama.cpp falls back
 * from them to IQ4_NL, and their encoders are 30 to 300 times slower than
 * the others (the target optimizer measures them on a smaller sample). */
int qz_is_grid_iq(uint32_t type);
/* tensor_requires_imatrix. */
int qz_requires_imatrix(const char *name, uint32_t type, uint32_t ftype);
/* llama_tensor_get_type for a tensor that allows quantization: the rules
 * (--tensor-type) are t's compiled rules. Fills *fallback_from when the
 * row-length fallback changed the type, and *why with what decided. */
int qz_tensor_type(qz_policy_state *qs, anvil_transcode *t, const anvil_gguf_tensor *tensor, const char *name,
                   qz_category cat, uint32_t default_type, uint32_t *type, uint32_t *fallback_from, const char **why,
                   anvil_error *err);
/* ggml_is_quantized for a built-in type id. */
int qz_is_quantized(uint32_t type);
/* ggml_blck_size (1 for plain types, 0 when unknown). */
uint32_t qz_block_size(uint32_t type);

/* quantize_keys.c: the loader's reads. The override for key (the first
 * one given), or NULL. */
const anvil_kv_override *qz_find_override(const anvil_quantize_options *o, const char *key);
/* get_key<uint32_t>: an INT override wins; otherwise the file's value,
 * which must be a u32. *found = 0 when neither (*v untouched). */
int qz_key_u32(anvil_transcode *t, const anvil_quantize_options *o, const char *key, uint32_t *v, int *found,
               anvil_error *err);
/* get_key_or_arr of a per-layer u32: a scalar (as qz_key_u32), or an array
 * of n_layer u32, i32 or bool values. *first (when not NULL) gets layer
 * 0's value and is untouched when the key is absent; *max (when not NULL)
 * the largest, 0 when absent. */
int qz_key_layers(anvil_transcode *t, const anvil_quantize_options *o, const char *key, uint32_t n_layer,
                  uint32_t *first, uint32_t *max, anvil_error *err);

/* quantize_arch.c: llama_model_create + load_hparams for architecture
 * `arch` (the name after --override-kv): refuses what llama.cpp refuses,
 * fills m. */
int qz_load_model(anvil_transcode *t, const anvil_quantize_options *o, const char *arch, qz_model *m,
                  anvil_error *err);
/* 1 when llama.cpp's attn_v rule for ftype reads n_gqa() (which aborts
 * on a model without layers). */
int qz_rules_ask_gqa(uint32_t ftype);
/* ggml_validate_row_data on a source tensor that is not F32/F16/BF16. */
int qz_check_data(const anvil_transcode_tensor *it, const uint8_t *data, anvil_error *err);
/* llama.cpp's architecture names, in its table's order. */
size_t qz_arch_count(void);
const char *qz_arch_name(size_t i);

/* quantize_sens.c: a parsed sensitivity file, sorted by name. */
#define QZ_SENS_MAX_LOW 3
#define QZ_SENS_MAX_ERR 64
typedef struct qz_sens_err {
    char type[32];
    double relerr;
} qz_sens_err;
typedef struct qz_sens_entry {
    char name[256];
    char ref[32];
    uint64_t ne[4];
    double kld;
    /* version 2: the low-bit reference types and their KL divergences
     * (n_low 1 .. QZ_SENS_MAX_LOW; 0 in version 1) */
    size_t n_low;
    char low_ref[QZ_SENS_MAX_LOW][32];
    double low_kld[QZ_SENS_MAX_LOW];
    /* version 3: the candidates' relative errors measured by --measure
     * (n_err 0: none stored), valid only for err_key: the key of the
     * measurement's inputs (quantize_target.c, qz_err_key) */
    uint64_t err_key;
    size_t n_err;
    qz_sens_err *err;
} qz_sens_entry;
struct anvil_quantize_sens {
    qz_sens_entry *e;
    size_t n;
    int version; /* 1: one reference type (linear response); 2: two (a fitted curve); 3: errors stored */
};
const qz_sens_entry *qz_sens_find(const anvil_quantize_sens *s, const char *name);
/* Every entry names a tensor of src with its shape, else an error naming it. */
int qz_sens_check(const anvil_quantize_sens *s, const anvil_gguf *src, anvil_error *err);

#endif
