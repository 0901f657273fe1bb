/* SPDX-License-Identifier: MIT */
/*
 * Internal: the tokenizer's KVs for `anvil convert` (tokenizer.ggml.*,
 * chat template), appended in convert_hf_to_gguf.py's order by the
 * tokenizer module (hf_vocab*.c). *written says whether any was.
 */
#ifndef ANVIL_HOST_HF_VOCAB_GLUE_H
#define ANVIL_HOST_HF_VOCAB_GLUE_H

#include "hf_internal.h"

int hf_vocab_glue_write(const hf_folder *f, const hf_arch *a, anvil_gguf_writer *w, int *written, anvil_error *err);

#endif
