/* SPDX-License-Identifier: MIT */
/*
 * Internal to host/src/model: the loaded model (hyper-parameters, the
 * mapped weights prepared for anvil_matmul), the forward pass's steps, and
 * llama-perplexity's statistics. Functions shared between this folder's
 * files carry the prefix mdl_.
 */
#ifndef ANVIL_MODEL_INTERNAL_H
#define ANVIL_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "anvil/model.h"

/* A matrix: rows x cols of its stored type, prepared for matmul. */
typedef struct mdl_mat {
    const anvil_gguf_tensor *t; /* NULL when absent */
    uint64_t rows, cols;
    anvil_weights *w;
    uint32_t expert; /* this slice's expert (0 for a 2-D matrix) */
    int is_expert;   /* a slice of a 3-D expert tensor */
} mdl_mat;

typedef struct mdl_layer {
    float *attn_norm, *ffn_norm, *q_norm, *k_norm; /* f32 copies; q/k norm may be NULL */
    float *bq, *bk, *bv;                           /* biases, NULL when absent */
    mdl_mat wq, wk, wv, wo, gate, up, down;        /* gate/up/down: dense layers only */
    /* MoE layers: the router (n_expert rows) and per expert its slice of the
     * 3-D expert tensors, prepared on their own. */
    mdl_mat gate_inp;
    mdl_mat *gate_exps, *up_exps, *down_exps; /* n_expert each, or NULL */
} mdl_layer;

enum { MDL_ROPE_NORM = 0, MDL_ROPE_NEOX = 2 };

struct anvil_model {
    anvil_ctx *ctx;
    anvil_gguf *g;
    anvil_model_info info;
    int kv_f16;
    int rope_type;
    uint32_t n_rot;
    float eps, freq_base, freq_scale;
    uint32_t n_expert, n_expert_used, n_ff_exp;
    float expert_weights_scale; /* 0: none */
    float *rope_freqs;          /* n_rot/2 factors, or NULL */
    float *output_norm;
    const anvil_gguf_tensor *tok_embd;
    const void *tok_embd_data; /* anvil_model_set_weight's bytes for it, or NULL (the file's) */
    mdl_mat output;            /* the token embedding when tied */
    mdl_layer *layers;
    /* anvil_model_set_observer: called with every matrix product's input. */
    anvil_model_observer observe;
    void *observe_arg;
};

/* The forward pass's scratch for n tokens. */
typedef struct mdl_scratch {
    size_t n;
    float *x, *h, *q, *k, *v, *att, *ff_a, *ff_b;
} mdl_scratch;

/* mdl_forward.c: the forward pass; logits may be NULL (the output matrix
 * is then not multiplied). */
int mdl_eval(anvil_model *m, const int32_t *tokens, size_t n, float *logits, anvil_error *err);
/* The layers first..n_layer-1 on x_in (the residual entering layer first;
 * NULL: the tokens' embeddings, first must be 0); save (may be NULL) gets
 * the residual entering layer l at save + l*n*n_embd for l in
 * first..n_layer (n_layer: the final norm's input). */
int mdl_eval_layers(anvil_model *m, const int32_t *tokens, size_t n, uint32_t first, const float *x_in, float *save,
                    float *logits, anvil_error *err);

/* mdl_load.c */
int mdl_read_vector(anvil_model *m, const char *name, uint64_t want, int required, float **out, anvil_error *err);

/* mdl_moe.c: the MoE FFN of n rows of h (normed) into out (n x n_embd). */
int mdl_moe_ffn(anvil_model *m, const mdl_layer *L, const float *h, size_t n, float *out, anvil_error *err);
int mdl_matmul(anvil_model *m, const mdl_mat *w, const float *x, size_t n, float *y, const float *bias,
               anvil_error *err);

/* mdl_attn.c: RoPE in place on n rows of n_heads heads (row stride in floats). */
void mdl_rope(const anvil_model *m, float *x, size_t n, uint32_t n_heads);
/* Causal attention of q (n x n_head*hd) over k, v (n x n_head_kv*hd) into out. */
int mdl_attention(anvil_model *m, const float *q, const float *k, const float *v, size_t n, float *out,
                  anvil_error *err);
/* RMSNorm of n rows of d values, times w (w may be NULL), into out. */
void mdl_rms_norm(const float *x, size_t n, size_t d, float eps, const float *w, float *out);
float mdl_round_f16(float x);
/* y[i] = mdl_round_f16(x[i]) for n values (x == y allowed); F16C where the CPU has it. */
void mdl_round_f16_rows(const float *x, float *y, size_t n);

/* mdl_stats.c: llama-perplexity's per-position statistics. */
typedef struct mdl_acc {
    double sum_nll, sum_nll2, sum_nll_base, sum_nll_base2, sum_nll_nll_base;
    double sum_kld, sum_kld2, sum_p_diff, sum_p_diff2, sum_p_diff4, max_p_diff;
    uint64_t n_same_top, count;
} mdl_acc;
int mdl_log_softmax(const float *logits, int n, float *out);
double mdl_nll(const float *logits, int n, int tok);
double mdl_kld_position(mdl_acc *a, const float *lp_base, int top_base, const float *lp, int top, int n, int tok);
void mdl_summarize(const mdl_acc *a, float *kld_values, size_t n_values, anvil_ppl_result *r);

/* mdl_base_logits.c: the base's log-probabilities saved for later runs. */
typedef struct mdl_blog mdl_blog;
typedef struct mdl_blog_key {
    uint32_t n_vocab, n_ctx, n_chunks, first;
    uint64_t hash; /* mdl_blog_hash over the chunks' tokens as evaluated */
} mdl_blog_key;
#define MDL_BLOG_HASH_SEED 0xcbf29ce484222325ull
uint64_t mdl_blog_hash(uint64_t h, const int32_t *tok, size_t n);
/* Open path to read (checked against k) or, with write, to write. */
int mdl_blog_open(mdl_blog **out, const char *path, int write, const mdl_blog_key *k, anvil_error *err);
/* The next scored position: n_vocab log-probabilities and the top index. */
int mdl_blog_read(mdl_blog *b, float *lp, int *top, anvil_error *err);
int mdl_blog_write(mdl_blog *b, const float *lp, int top, anvil_error *err);
/* Release b; a file being written is put in place when commit, else removed. */
int mdl_blog_close(mdl_blog *b, int commit, anvil_error *err);

#endif
