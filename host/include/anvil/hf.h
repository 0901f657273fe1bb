/* SPDX-License-Identifier: MIT */
/*
 * anvil — Hugging Face checkpoints: `anvil convert`.
 *
 * anvil_hf_convert reads a checkpoint folder (config.json, one or many
 * *.safetensors shards with model.safetensors.index.json, tokenizer files)
 * and writes the GGUF llama.cpp's convert_hf_to_gguf.py writes from it with
 * the same options, byte for byte: every KV in its order and wire type
 * (general.* from its metadata heuristics, the architecture's hparams, the
 * tokenizer), tensor names, order, shapes, types and bytes, single files and
 * split sets. Architectures: LlamaForCausalLM, MistralForCausalLM,
 * MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
 * Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, Gemma2ForCausalLM,
 * Gemma3ForCausalLM, Phi3ForCausalLM, GptOssForCausalLM,
 * DeepseekV3ForCausalLM, Glm4MoeForCausalLM, Qwen3NextForCausalLM,
 * Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM (and the text model of their
 * *ForConditionalGeneration checkpoints); F32/F16/BF16 weights, block-
 * scaled FP8 ones (dequantized in f32 as convert's dequant_simple) and MXFP4
 * experts (repacked, never inflated). Output types:
 * f32, f16, bf16, q8_0, auto (the first matrix's type, bf16 or f16).
 *
 * Bad input (no config.json or weights, an unsupported architecture, a shard
 * missing, a tensor in no or two shards, a shape config.json contradicts,
 * NaN/Inf in a weight) is an error naming the file and tensor; nothing is
 * written then. Outputs appear atomically (a split set as one step).
 */
#ifndef ANVIL_HF_H
#define ANVIL_HF_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct anvil_hf_convert_options {
    size_t struct_size;
    const char *outtype;             /* "f32" "f16" "bf16" "q8_0" "auto" (NULL = auto) */
    const char *outfile;             /* NULL: named as convert names it, in the folder; may hold
                                     {ftype} (lower case) or {FTYPE}; a folder: the default name in it */
    int vocab_only;                  /* metadata and tokenizer only, no tensors */
    uint64_t split_max_size;         /* bytes of tensor data a part (0 = no limit) */
    uint64_t split_max_tensors;      /* tensors a part (0 = no limit) */
    int no_tensor_first_split;       /* part 1 holds only the metadata */
    const char *model_name;          /* --model-name (general.name), or NULL */
    const char *metadata_path;       /* --metadata override JSON, or NULL */
    int dry_run;                     /* plan only: nothing is written */
    anvil_gguf_progress_fn progress; /* after each tensor written (may be NULL) */
    void *progress_arg;
    /* convert's --mtp / --no-mtp (--no-nextn), for the classes that export
     * their multi-token-prediction layers (Glm4MoeForCausalLM, the Qwen3.5
     * hybrids); any other class is refused with either, as convert refuses
     * it. mtp_only: the MTP layers with the embeddings, output norm and
     * head only, named mtp-<Name>-<TYPE>.gguf by default; no_mtp: without
     * the MTP layers (block_count and nextn_predict_layers as if the
     * checkpoint had none). At most one of them. */
    int mtp_only;
    int no_mtp;
    /* convert's --fp8-as-q8: each output tensor of 2+ dims that convert
     * yields from a weight it dequantized (quantization_config fp8: one
     * with a *_scale_inv) is Q8_0 whatever the outtype; 1-D tensors and
     * *_norm.weight stay F32, rows not a multiple of 32 fall back to F16;
     * general.file_type stays the outtype's, as convert writes it. */
    int fp8_as_q8;
} anvil_hf_convert_options;

ANVIL_API void anvil_hf_convert_options_init(anvil_hf_convert_options *o);

/* One file written (or planned, in a dry run). */
typedef struct anvil_hf_output {
    char path[4096];
    uint64_t bytes;
    size_t n_tensors;
} anvil_hf_output;

typedef struct anvil_hf_convert_result {
    char out_path[4096];      /* the file written (a split set: its first part) */
    uint32_t n_parts;         /* 1 for a single file */
    anvil_hf_output *outputs; /* n_parts entries; free with anvil_hf_convert_result_free */
    size_t n_tensors;
    int64_t total_params;
    uint64_t bytes;    /* bytes of all files written (or that would be) */
    char ftype[8];     /* "F16", "BF16", "Q8_0", "F32" */
    const char *arch;  /* "llama", "qwen2", "qwen3" */
    int has_tokenizer; /* tokenizer.* keys were written */
} anvil_hf_convert_result;

/* ctx (needed for q8_0, may be NULL otherwise: then one thread) encodes
 * blocks and lends its worker threads. */
ANVIL_API int anvil_hf_convert(anvil_ctx *ctx, const char *hf_dir, const anvil_hf_convert_options *o,
                               anvil_hf_convert_result *r, anvil_error *err);

ANVIL_API void anvil_hf_convert_result_free(anvil_hf_convert_result *r);

/* ANVIL_E_INVALID_ARG, naming both, when out is (or resolves to) a file a
 * conversion of hf_dir reads: config.json, the index, a *.safetensors, a
 * tokenizer or chat-template file, generation_config.json, README.md
 * (anvil_output_check on each). anvil_hf_convert checks its outputs so;
 * quantize and transcode from a folder call it for theirs. */
ANVIL_API int anvil_hf_output_check(const char *hf_dir, const char *out, anvil_error *err);

/* The folder as the GGUF `anvil convert HF_DIR --outtype auto` writes from
 * it, opened for anvil's quantize and transcode engines (anvil_quantize_plan,
 * anvil_transcode_plan), so that their output is byte for byte
 * convert-then-quantize with no intermediate file: the KVs and the tensor
 * directory are those of that file, and each tensor is converted from the
 * shards when the engine reads it (one tensor in memory at a time; the
 * shards' pages are released once read). The tensors' data pointers are
 * NULL: other readers of tensor bytes cannot use *out. ctx (may be NULL)
 * lends its threads; it must outlive *out. */
ANVIL_API int anvil_hf_open_as_gguf(anvil_ctx *ctx, const char *hf_dir, anvil_gguf **out, anvil_error *err);

/* anvil_hf_open_as_gguf of the file `convert --outtype auto` writes with
 * --mtp (mtp_only) or --no-mtp (no_mtp): the same checks and errors as
 * anvil_hf_convert's for them (both set: ANVIL_E_INVALID_ARG; either for a
 * class without MTP export: ANVIL_E_UNSUPPORTED naming it). Both 0: the
 * same as anvil_hf_open_as_gguf. */
ANVIL_API int anvil_hf_open_as_gguf_mtp(anvil_ctx *ctx, const char *hf_dir, int mtp_only, int no_mtp,
                                        anvil_gguf **out, anvil_error *err);

/* anvil_hf_open_as_gguf of the file `convert --outtype auto` writes with
 * the options of o that shape the model: mtp_only, no_mtp (as
 * anvil_hf_open_as_gguf_mtp) and fp8_as_q8 (a field read only when it
 * lies inside o->struct_size). outtype must be NULL or "auto" and
 * vocab_only 0 (else ANVIL_E_INVALID_ARG); the fields about writing
 * (outfile, split, names, metadata, dry_run, progress) are not read.
 * o NULL: the same as anvil_hf_open_as_gguf. */
ANVIL_API int anvil_hf_open_as_gguf_opts(anvil_ctx *ctx, const char *hf_dir, const anvil_hf_convert_options *o,
                                         anvil_gguf **out, anvil_error *err);

/* Part i (0-based) of n of a split output named like convert's:
 * "<path without .gguf>-00001-of-00003.gguf". */
ANVIL_API int anvil_hf_part_path(char *buf, size_t cap, const char *path, uint32_t i, uint32_t n);

#ifdef __cplusplus
}
#endif

#endif
