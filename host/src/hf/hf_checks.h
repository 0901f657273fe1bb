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

#endif
