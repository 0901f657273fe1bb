/* SPDX-License-Identifier: MIT */
/* A synthetic llama-shaped model written as a GGUF file (synth_model.c):
 * a test, demo and benchmark fixture on libanvil's public API, not part of
 * it. Link anvil_synth_model before the anvil library the program uses
 * (anvil or anvil_internal). */
#ifndef ANVIL_SYNTH_MODEL_H
#define ANVIL_SYNTH_MODEL_H

#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"

/* For demos, tests and benchmarks: a real GGUF with llama metadata (llama.*
 * hyperparameters, a llama-style tokenizer vocabulary of n_vocab entries, or
 * a real one copied from another file) and deterministic weights
 * (heavy-tailed, per-row scales; norms and the expert router in F32), in
 * llama.cpp's tensor names and order. */
typedef struct synth_model {
    uint32_t n_vocab, n_embd, n_ff, n_layer, n_head, n_head_kv;
    uint32_t type; /* type of the matrices: F32, F16 or BF16 */
    uint64_t seed;
    const char *name; /* general.name; NULL: "anvil synthetic llama" */
    /* Optional (zero: a dense model with anvil's own vocabulary): */
    const anvil_gguf *tokenizer_from; /* copy this file's tokenizer.* keys (its token count must be n_vocab) */
    uint32_t n_expert;                /* > 0: Mixtral-style MoE layers (ffn_gate_inp, ffn_{gate,up,down}_exps) */
    uint32_t n_expert_used;
    int tied_embeddings; /* no output.weight: the output reuses token_embd */
} synth_model;

int synth_model_write(const char *path, const synth_model *m, const anvil_ctx *ctx, anvil_error *err);
/* Bytes the model's file will take. */
int synth_model_size(const synth_model *m, uint64_t *bytes, anvil_error *err);

#endif
