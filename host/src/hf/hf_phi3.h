/* SPDX-License-Identifier: MIT */
/*
 * Internal: Phi3ForCausalLM for `anvil convert` (hf_phi3.c): its hparams
 * KVs (set_gguf_parameters, ending with general.file_type and
 * sliding_window), the longrope attention-factor KV that the converter
 * writes right after general.architecture (full conversions only), and its
 * tensors in the converter's order (rope factors first, fused qkv and
 * gate_up kept fused).
 */
#ifndef ANVIL_HOST_HF_PHI3_H
#define ANVIL_HOST_HF_PHI3_H

#include "hf_internal.h"

int hf_phi3_hparams(const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err);
int hf_phi3_extra_kvs(const hf_folder *f, anvil_gguf_writer *w, anvil_error *err);
int hf_phi3_plan(const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);

#endif
