/* SPDX-License-Identifier: MIT */
/*
 * Internal: the checks a planned conversion passes before anything is
 * encoded (hf_checks.c).
 */
#ifndef ANVIL_HOST_HF_CHECKS_H
#define ANVIL_HOST_HF_CHECKS_H

#include "hf_internal.h"

/* ANVIL_OK, or an error naming what is missing or unusable: no tensors, a
 * tensor with a dimension of 0, a generated tensor that is not finite, a
 * tensor the architecture needs in a layer below num_hidden_layers (or
 * token_embd / output_norm). */
int hf_check_plan(const hf_arch *a, const hf_folder *f, const hf_out_tensor *ts, size_t n, anvil_error *err);

/* Every shard set "<stem>-<k>-of-<N>.safetensors" among f->part_names
 * (sorted) holds each k of 1..N; else an error naming the first missing
 * shard (has_index: the index leaves it out). hf_shards.c. */
int hf_shard_sets_check(const hf_folder *f, int has_index, anvil_error *err);

/* The largest vocab_size taken on config.json's word alone (no token
 * embedding to confirm it): 2^24 ids, over 60 times today's largest. */
#define HF_MAX_VOCAB (1 << 24)
/* config.json's vocab_size equals the rows of model.embed_tokens.weight
 * when the checkpoint has it (also for --vocab-only), else is at most
 * HF_MAX_VOCAB: convert pads the tokenizer to it with [PADn] tokens. */
int hf_check_vocab_size(const hf_folder *f, anvil_error *err);

#endif
