/* SPDX-License-Identifier: MIT */
/*
 * The quality benchmark's model side: llama.cpp (libllama from the oracle,
 * CPU) evaluates a base model and quantized models over held-out text, as
 * `llama-perplexity --kl-divergence` does, and host/src/model/mdl_stats.c turns the logits
 * into figures.
 *
 * Contract:
 *  - The text is read whole, one trailing newline dropped (llama.cpp's -f),
 *    tokenized by the base model's vocabulary with its special tokens
 *    (BOS first when the vocabulary adds one), and cut into
 *    n_tokens / n_ctx chunks of n_ctx tokens; each chunk's first token is
 *    replaced by BOS. The positions scored are n_ctx/2 .. n_ctx-2 of every
 *    chunk (each predicts the token after it): n_ctx - 1 - n_ctx/2 a chunk.
 *  - The base model's log-probabilities at those positions are cached in a
 *    file keyed by the base file's bytes, the tokens and n_ctx, so later
 *    runs evaluate only the quantized models. A cache that holds at least
 *    the chunks asked for is used; otherwise it is rebuilt (atomic write).
 *  - A quantized model must tokenize the text to the same tokens with the
 *    same vocabulary size, or it is refused.
 *  - One chunk at a time, one sequence, n_batch = n_ubatch = n_ctx, the
 *    given thread count: for a fixed thread count the figures are the same
 *    bytes on every run on one machine.
 */
#ifndef ANVIL_TESTS_KLD_EVAL_H
#define ANVIL_TESTS_KLD_EVAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model_internal.h"
#include "llama_oracle.h"

typedef struct kld_opts {
    const char *oracle_dir;
    const char *text_path;
    const char *cache_path; /* NULL: $TMPDIR/anvil-kld-<key>.cache */
    int n_ctx;              /* tokens a chunk (256) */
    int n_chunks;           /* at most this many chunks; <= 0: all */
    int threads;
    int verbose; /* progress on stderr */
} kld_opts;

typedef struct kld_bench {
    llama_oracle lo;
    kld_opts o;
    char base_path[1024];
    char cache_path[1024];
    int32_t *tokens;
    size_t n_tokens;
    int n_chunks, n_vocab, first, n_scored;
    uint64_t key; /* base bytes, tokens, n_ctx */
    FILE *cache;
    int32_t *bt_tok, *bt_pos, *bt_nseq, **bt_seq, bt_seq0; /* the batch */
    int8_t *bt_want;
    double base_seconds; /* evaluating the base (0 when the cache served) */
} kld_bench;

typedef struct kld_result {
    uint64_t bytes, n_params;
    double bpw; /* file bytes * 8 / parameters */
    double seconds;
    anvil_ppl_result s;
} kld_result;

/* Open the oracle, tokenize the text, and make sure the base's
 * log-probabilities are in the cache (evaluating the base if not). 0, or a
 * status < 0 with why: -2 when the oracle itself cannot be loaded. */
int kld_open(kld_bench *b, const char *base_path, const kld_opts *o, char *why, size_t why_size);
/* Evaluate one quantized model against the base. 0, or -1 with why. */
int kld_eval(kld_bench *b, const char *path, kld_result *r, char *why, size_t why_size);
void kld_close(kld_bench *b);

#endif
