/* SPDX-License-Identifier: MIT */
/*
 * llama.cpp as an oracle: libllama.v0.5.0.so from the same npm package as
 * ggml, by dlopen. Its structs are declared here from include/llama.h of
 * that release and checked against the library at run time: the default
 * parameter structs are returned in caller memory, so the bytes the library
 * writes tell their size, and the known defaults tell the field offsets.
 */
#ifndef ANVIL_PARITY_LLAMA_ORACLE_H
#define ANVIL_PARITY_LLAMA_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lq_imatrix {
    const char *name;
    const float *data;
    size_t size;
} lq_imatrix;

enum { LQ_KV_INT = 0, LQ_KV_FLOAT = 1, LQ_KV_BOOL = 2, LQ_KV_STR = 3 };

typedef struct lq_kv_override {
    int32_t tag;
    char key[128];
    union {
        int64_t val_i64;
        double val_f64;
        bool val_bool;
        char val_str[128];
    } v;
} lq_kv_override;

typedef struct lq_tensor_type {
    const char *pattern;
    int32_t type;
} lq_tensor_type;

typedef struct lq_quantize_params {
    int32_t nthread;
    int32_t ftype;
    int32_t output_tensor_type;
    int32_t token_embedding_type;
    bool allow_requantize;
    bool quantize_output_tensor;
    bool only_copy;
    bool pure;
    bool keep_split;
    bool dry_run;
    const lq_imatrix *imatrix;
    const lq_kv_override *kv_overrides;
    const lq_tensor_type *tt_overrides;
    const int32_t *prune_layers;
    size_t max_buf_size;
} lq_quantize_params;

typedef struct lq_model_params {
    void *devices;
    const void *tensor_buft_overrides;
    int32_t n_gpu_layers;
    int32_t split_mode;
    int32_t load_mode;
    int32_t lazy_mode;
    int32_t main_gpu;
    const float *tensor_split;
    void *progress_callback;
    void *progress_callback_user_data;
    const void *kv_overrides;
    bool vocab_only, check_tensors, use_extra_bufts, no_host, no_alloc, load_mtp;
} lq_model_params;

typedef struct lq_context_params {
    uint32_t n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max, n_outputs_max_per_seq;
    int32_t n_threads, n_threads_batch;
    int32_t ctx_type, rope_scaling_type, pooling_type, attention_type, flash_attn_type;
    float rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
    uint32_t yarn_orig_ctx;
    float defrag_thold;
    void *cb_eval;
    void *cb_eval_user_data;
    int32_t type_k, type_v;
    void *abort_callback;
    void *abort_callback_data;
    bool embeddings, offload_kqv, no_perf, op_offload, swa_full, kv_unified;
    void *samplers;
    size_t n_samplers;
    void *ctx_other;
} lq_context_params;

typedef struct lq_batch {
    int32_t n_tokens;
    int32_t *token;
    float *embd;
    int32_t *pos;
    int32_t *n_seq_id;
    int32_t **seq_id;
    int8_t *logits;
} lq_batch;

typedef struct llama_oracle {
    void *lib;
    char dir[1024];
    lq_quantize_params qdefaults;
    lq_model_params mdefaults;
    lq_context_params cdefaults;
    uint32_t (*quantize)(const char *in, const char *out, const lq_quantize_params *p);
    void *(*load_model)(const char *path, lq_model_params p);
    void (*free_model)(void *model);
    void *(*init_context)(void *model, lq_context_params p);
    void (*free_context)(void *ctx);
    lq_batch (*batch_get_one)(int32_t *tokens, int32_t n);
    int32_t (*decode)(void *ctx, lq_batch b);
    float *(*logits_ith)(void *ctx, int32_t i);
    const void *(*model_vocab)(const void *model);
    int32_t (*vocab_n_tokens)(const void *vocab);
    int32_t (*tokenize)(const void *vocab, const char *text, int32_t text_len, int32_t *tokens, int32_t n_max,
                        bool add_special, bool parse_special);
    int32_t (*vocab_bos)(const void *vocab);
    bool (*vocab_get_add_bos)(const void *vocab);
    void *(*get_memory)(const void *ctx);
    void (*memory_clear)(void *mem, bool data);
    uint64_t (*model_n_params)(const void *model);
    void (*log_set)(void (*cb)(int, const char *, void *), void *arg);
    int backends_loaded;
    char log[8192]; /* the tail of llama.cpp's log */
    size_t log_len;
} llama_oracle;

/* Open libllama next to ggml (dir: the oracle's folder). 0, or -1 with why. */
int llama_oracle_open(llama_oracle *lo, const char *dir, char *why, size_t why_size);
/* llama.cpp's log goes to one place at a time (llama_log_set is global):
 * open points it at lo; close drops it (lo may be on a stack that dies), so
 * a caller with several oracles open points it back with log_here. */
void llama_oracle_close(llama_oracle *lo);
void llama_oracle_log_here(llama_oracle *lo);
/* Forget the log (call before a run whose messages you want). */
void llama_oracle_log_clear(llama_oracle *lo);
/* The last line of the log that holds text, for messages. */
const char *llama_oracle_log_last(llama_oracle *lo, char *buf, size_t size);
/* Load ggml's CPU backends next to libllama and initialise llama.cpp
 * (once; later calls return 0 at once). 0, or -1 with why. */
int llama_oracle_backends(llama_oracle *lo, char *why, size_t why_size);
/* Load path with llama.cpp, run `steps` greedy decode steps from token 1
 * (BOS) and return the tokens in out. 0 on success; -1 with why. */
int llama_oracle_generate(llama_oracle *lo, const char *path, int steps, int32_t *out, char *why, size_t why_size);

#endif
