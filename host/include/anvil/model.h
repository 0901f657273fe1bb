/* SPDX-License-Identifier: MIT */
/*
 * anvil — a GGUF model's forward pass on the CPU, and perplexity / KL
 * divergence over chunks of tokens as llama-perplexity scores them.
 *
 * Contract:
 *  - Architectures: llama (dense, or Mixtral-style MoE), qwen2, qwen3,
 *    qwen3moe. Anything else, and a vocab-only file, is refused naming what
 *    is supported.
 *  - The weights stay memory-mapped in their stored type; every matrix goes
 *    through anvil_matmul's dispatch (activations quantized to the weight's
 *    activation format as ggml does), so every backend and the INI config
 *    apply. Norm weights and biases are read to f32 once.
 *  - One evaluation is one sequence of n tokens at positions 0..n-1 (no cache
 *    between calls), computed as llama.cpp builds the graph: embeddings
 *    (get_rows), per layer RMSNorm, Q/K/V (+ bias), Q/K RMSNorm, RoPE (NORM
 *    for llama, NEOX for qwen; freq_base, linear scaling, rope_freqs), causal
 *    GQA attention with an f32 softmax (sum in double), output projection,
 *    residual, RMSNorm, SwiGLU (or the MoE: softmax router, top-k, weights
 *    normalized and scaled, per-expert SwiGLU, summed in the chosen order),
 *    residual; final RMSNorm; output (or the tied token embedding). F16 and
 *    BF16 matrices get their activations rounded to f16 / bf16 first, as
 *    ggml's vec_dot_type conversion does.
 *  - kv_f16 rounds K, V and Q to f16 as llama.cpp's default f16 KV cache
 *    does; without it K and V stay f32 (llama.cpp with type_k/type_v f32).
 *  - Structs crossing this boundary start with their size (set it to
 *    sizeof before the call); a smaller size from an older caller is read
 *    as far as it goes.
 */
#ifndef ANVIL_MODEL_H
#define ANVIL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct anvil_model anvil_model;

typedef struct anvil_model_info {
    size_t size; /* sizeof(anvil_model_info) */
    char arch[32];
    uint32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    int32_t bos;   /* BOS token id, -1 when the file names none */
    int add_bos;   /* 1 when the vocabulary adds BOS (llama_vocab_get_add_bos) */
    uint32_t type; /* ggml type id of the first attention matrix (what the file mostly is) */
} anvil_model_info;

typedef struct anvil_model_opts {
    size_t size; /* sizeof(anvil_model_opts) */
    int kv_f16;  /* round K, V and Q to f16 as llama.cpp's default KV cache does */
} anvil_model_opts;

/* Open path (a GGUF file or part 1 of a split set) on ctx. opts may be NULL
 * (kv_f16 = 0). The context is retained until anvil_model_close. */
ANVIL_API int anvil_model_open(anvil_model **out, anvil_ctx *ctx, const char *path, const anvil_model_opts *opts,
                               anvil_error *err);
ANVIL_API void anvil_model_close(anvil_model *m);
ANVIL_API int anvil_model_get_info(const anvil_model *m, anvil_model_info *out);

/* Evaluate tokens[0..n) at positions 0..n-1: logits (n x n_vocab floats,
 * row i = the distribution after token i). Token ids are checked against
 * the vocabulary. Not to be called on one model from two threads at once. */
ANVIL_API int anvil_model_eval(anvil_model *m, const int32_t *tokens, size_t n, float *logits, anvil_error *err);

/* The layers first..n_layer-1 of one sequence, for measuring one layer's
 * weights without recomputing the layers below: x_in is the residual
 * entering layer first (n x n_embd floats; NULL: the tokens' embeddings,
 * then first must be 0). save (may be NULL; (n_layer + 1) x n x n_embd
 * floats) gets the residual entering layer l at save + l*n*n_embd for l in
 * first..n_layer (n_layer: the final norm's input). logits may be NULL.
 * With first 0 and x_in NULL the logits are anvil_model_eval's, bit for bit. */
ANVIL_API int anvil_model_eval_layers(anvil_model *m, const int32_t *tokens, size_t n, uint32_t first,
                                      const float *x_in, float *save, float *logits, anvil_error *err);
/* Evaluate with other values for one weight tensor (named as in the GGUF,
 * a 3-D expert tensor whole): data is the tensor in its stored type, the
 * same bytes as the file's (n_bytes); the caller keeps it valid until the
 * next call for that tensor. data NULL restores the file's. The token
 * embedding serves the output too when the model has no output.weight
 * (tied): both then see data. An unknown or non-matrix tensor is
 * ANVIL_E_NOT_FOUND. */
ANVIL_API int anvil_model_set_weight(anvil_model *m, const char *name, const void *data, anvil_error *err);
/* An observer of the forward pass: called on the evaluating thread before
 * each matrix product with its input, n_rows rows of n_cols f32 values as
 * they are before any rounding to the weight's activation type. weight is
 * the GGUF tensor's name; for a slice of a 3-D expert tensor, expert is the
 * slice and n_expert the tensor's third dimension (the rows are the tokens
 * routed to that expert, in token order), else expert = 0, n_expert = 1.
 * The output matrix is seen only when logits are asked for. */
typedef void (*anvil_model_observer)(void *arg, const char *weight, uint32_t expert, uint32_t n_expert,
                                     const float *x, size_t n_rows, size_t n_cols);
/* Set (fn non-NULL) or clear the observer. Unset, it costs one test per
 * product. */
ANVIL_API void anvil_model_set_observer(anvil_model *m, anvil_model_observer fn, void *arg);

typedef struct anvil_ppl_opts {
    size_t size;  /* sizeof(anvil_ppl_opts) */
    int n_ctx;    /* tokens a chunk (512 when <= 0) */
    int n_chunks; /* at most this many chunks; <= 0: all */
    /* Called after each chunk (may be NULL). */
    void (*progress)(void *arg, int chunk, int n_chunks, double seconds);
    void *progress_arg;
    /* A file of the base's log-probabilities (may be NULL). When it exists
     * it is read instead of evaluating a base (base may be NULL; it must
     * have been made from the same tokens, n_ctx, chunks and vocabulary,
     * else an error names what differs); when it does not, base is
     * evaluated and its log-probabilities are saved there. */
    const char *base_logits;
} anvil_ppl_opts;

typedef struct anvil_ppl_result {
    size_t size;                    /* sizeof(anvil_ppl_result) */
    uint64_t tokens, chunks, count; /* tokens read, chunks evaluated, positions scored */
    double ppl, ppl_unc;
    double seconds, tokens_per_s; /* evaluating the model (the base not counted) */
    /* With a base (else 0): */
    int has_base;
    double ppl_base, ppl_base_unc, ln_ratio, ln_ratio_unc, ppl_ratio;
    double kld, kld_unc, kld_median, kld_p90, kld_p99, kld_p999, kld_max, kld_min;
    double top1, top1_unc;     /* fraction of positions with the same first argmax */
    double rms_dp, rms_dp_unc; /* RMS of p(next) - p_base(next), fraction */
    double max_dp;             /* largest |p(next) - p_base(next)| */
} anvil_ppl_result;

/* llama-perplexity over tokens (as llama_tokenize gives them, BOS first
 * when the vocabulary adds one): n / n_ctx chunks of n_ctx tokens, each
 * chunk's first token replaced by BOS when the vocabulary adds one, the
 * positions n_ctx/2 .. n_ctx-2 scored against the token after each. With
 * base (may be NULL): llama-perplexity --kl-divergence's statistics of
 * KL(P_base || P_model) over the same positions; base must have the same
 * vocabulary size. Fewer than 2 * n_ctx tokens is an error saying how many
 * are needed. */
ANVIL_API int anvil_perplexity(anvil_model *m, anvil_model *base, const int32_t *tokens, size_t n,
                               const anvil_ppl_opts *opts, anvil_ppl_result *out, anvil_error *err);

/* Read a token file: whitespace-separated decimal ids (at most 1 << 28 of
 * them, each in [0, n_vocab) when n_vocab > 0). *tokens is malloc'd. A bad
 * id is an error naming its byte offset. */
ANVIL_API int anvil_tokens_read(const char *path, uint32_t n_vocab, int32_t **tokens, size_t *n, anvil_error *err);
/* The same on bytes in memory (what the fuzz target drives). */
ANVIL_API int anvil_tokens_parse(const char *text, size_t len, uint32_t n_vocab, int32_t **tokens, size_t *n,
                                 anvil_error *err);

/* Text to token ids as llama_tokenize(add_special = true, parse_special =
 * false) would, with the model's own vocabulary; *tokens is malloc'd. */
ANVIL_API int anvil_model_tokenize(const anvil_model *m, const char *text, size_t len, int32_t **tokens, size_t *n,
                                   anvil_error *err);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_MODEL_H */
