/* SPDX-License-Identifier: MIT */
/*
 * anvil — transcode a float model into block formats, fold LoRA adapters
 * into a float base.
 *
 * Transcode. A plan decides, tensor by tensor, what the output holds; the
 * run then streams it out of core. The policy is conservative: each rule
 * gives up some convenience so that a model is never silently degraded.
 *
 *  - Only matrix weights change type: at least 2 dims (trailing 1s do not
 *    count, as in ggml_n_dims), a name ending in ".weight", and no "norm" in
 *    the name. Everything else keeps its stored type and bytes.
 *  - The type a matrix weight gets comes from, first match wins: the
 *    --tensor-type rules (ECMAScript regex, as llama.cpp reads them, searched in the name, in the
 *    order given), the output / token-embedding types (for "output.weight"
 *    and "token_embd.weight"), the experts type (names ending in
 *    "_exps.weight"), then the global dtype. None: it keeps its type.
 *  - A tensor that is already quantized is not requantized (two
 *    quantization errors would stack): asking for another block format is
 *    refused at plan time, naming the tensor, unless allow_requantize is set.
 *    Asking for f16 or f32 dequantizes it (ggml's decoder, bit for bit). The
 *    experts type may always requantize: experts are where bytes cost most in
 *    decode bandwidth and where redundancy keeps the risk lowest.
 *  - A row length that is not a multiple of the target's block keeps the
 *    source type (no silent fallback to another format) and is listed.
 *
 * Streaming. Every output tensor's type and size is known from the plan, so
 * the header (with all offsets) is written first; then each tensor is read
 * from the mapping in slabs of rows (prefetched ahead, released after),
 * decoded to f32, encoded with the rows split across a thread pool, written,
 * and its buffers freed before the next. Peak memory is bounded by one
 * tensor's output plus a slab (16 MiB of source) and one chunk of f32 per
 * thread, whatever the model size; a tensor copied as it is goes to the
 * writer straight from the mapping, its pages released right after (the
 * writer takes a tensor in one piece, so they are resident while it is
 * written: never more than that tensor's f32 size). Chunks of rows are
 * fixed by the tensor's shape, not by the thread count, so the output bytes
 * and the quality figures are identical for any number of threads.
 *
 * Output. KVs are copied raw (byte for byte, split.* keys left out), then
 * general.quantization_version (u32 2) and general.file_type (u32, llama.cpp's
 * LLAMA_FTYPE for the dominant output type) are set, in that order, as
 * llama-quantize does. One file, or a llama.cpp-style split set when a
 * maximum part size is given. Every file is written to a temporary name and
 * renamed into place only when all of them are complete; on any error
 * nothing new is left behind and an existing output is untouched.
 */
#ifndef ANVIL_TRANSCODE_H
#define ANVIL_TRANSCODE_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "No type given" in the options. */
#define ANVIL_TRANSCODE_NO_TYPE UINT32_MAX

/* One --tensor-type rule. */
typedef struct anvil_transcode_rule {
    const char *pattern; /* ECMAScript regex (llama.cpp's dialect), searched in the name */
    uint32_t type;
} anvil_transcode_rule;

/* Progress, reported from the calling thread after every slab of rows. */
typedef struct anvil_transcode_progress {
    size_t tensor; /* index of the tensor being written */
    size_t n_tensors;
    const char *name;
    uint64_t bytes_done; /* source tensor bytes read so far */
    uint64_t bytes_total;
    double seconds; /* since the run began */
} anvil_transcode_progress;
typedef void (*anvil_transcode_progress_fn)(void *arg, const anvil_transcode_progress *p);

/* A rewrite of a tensor's values before it is encoded (merge-lora uses it).
 * wants() says whether tensor t is rewritten; rows() is then called with
 * n_rows decoded rows starting at row0 (each of t->ne[0] floats) to change in
 * place. rows() runs on the pool's threads, concurrently on disjoint rows. */
typedef struct anvil_transcode_hook {
    int (*wants)(void *arg, const anvil_gguf_tensor *t);
    int (*rows)(void *arg, const anvil_gguf_tensor *t, uint64_t row0, uint64_t n_rows, float *rows, anvil_error *err);
    void *arg;
} anvil_transcode_hook;

typedef struct anvil_transcode_options {
    uint32_t dtype;           /* global target (--dtype) */
    uint32_t experts_dtype;   /* "*_exps.weight"; may requantize */
    uint32_t output_type;     /* "output.weight" */
    uint32_t token_embd_type; /* "token_embd.weight" */
    const anvil_transcode_rule *rules;
    size_t n_rules;
    uint64_t split_max_bytes; /* > 0: a split set, parts cut as llama.cpp's gguf-split does */
    unsigned threads;         /* 0: anvil_ctx_threads(ctx) */
    int skip_quality;         /* 1: no decode-back error figures (a little faster) */
    anvil_transcode_progress_fn progress;
    void *progress_arg;
    anvil_transcode_hook hook;  /* optional */
    int allow_requantize;       /* --dtype / --tensor-type may requantize quantized tensors */
    uint64_t split_max_tensors; /* > 0: a split set of at most this many tensors a part
                                   (gguf-split's --split-max-tensors); not with split_max_bytes */
} anvil_transcode_options;

/* Every type ANVIL_TRANSCODE_NO_TYPE, everything else zero. */
ANVIL_API void anvil_transcode_options_init(anvil_transcode_options *o);

/* Why a tensor has the output type it has. */
typedef enum anvil_transcode_why {
    ANVIL_TRANSCODE_CONVERT = 0,    /* decoded to f32 and encoded to dst_type */
    ANVIL_TRANSCODE_KEEP_POLICY,    /* not a matrix weight (1-D, not *.weight, or a norm) */
    ANVIL_TRANSCODE_KEEP_NO_RULE,   /* a matrix weight no option gives a type */
    ANVIL_TRANSCODE_KEEP_SAME,      /* the chosen type is already its type */
    ANVIL_TRANSCODE_KEEP_QUANTIZED, /* already quantized: only the experts type requantizes */
    ANVIL_TRANSCODE_KEEP_ROWS,      /* row length not a multiple of the target's block */
    ANVIL_TRANSCODE_KEEP_SOURCE     /* its type cannot be decoded to f32 (integers, f64) */
} anvil_transcode_why;

/* Short text for a reason ("not a matrix weight", ...). */
ANVIL_API const char *anvil_transcode_why_string(anvil_transcode_why why);

typedef struct anvil_transcode_tensor {
    const anvil_gguf_tensor *src;
    const char *name;
    uint32_t src_type;
    uint32_t dst_type;  /* == src_type unless converted */
    uint32_t want_type; /* what the options asked for, or NO_TYPE */
    const char *rule;   /* option that chose want_type ("--dtype", "--tensor-type <re>", ...) or NULL */
    anvil_transcode_why why;
    int rewritten; /* the hook rewrites it: re-encoded even when its type is kept */
    uint64_t row_len, n_rows;
    uint64_t src_bytes, dst_bytes;
    uint32_t part; /* output part, 0-based */
    /* After the run, for tensors that went through the encoder: */
    int has_quality;
    double rmse, max_abs, snr_db; /* snr_db is +inf when the error is exactly 0 */
    double sum_sq_err, sum_sq_signal;
    /* Since ABI 1.1 (quantize): */
    uint32_t fallback_from;   /* the type chosen before the row-length fallback, or NO_TYPE */
    const float *imatrix;     /* importance weights handed to the encoder: ne[0] per expert, or NULL */
    const char *imatrix_name; /* the importance-matrix entry they come from, or NULL */
    int needs_imatrix;        /* llama.cpp requires an importance matrix for its target type */
} anvil_transcode_tensor;

/* Per output type, over the tensors encoded to it. */
typedef struct anvil_transcode_quality {
    uint32_t type;
    size_t n_tensors;
    uint64_t n_elements;
    double rmse, max_abs, snr_db;
} anvil_transcode_quality;

typedef struct anvil_transcode_summary {
    size_t n_tensors;
    size_t n_converted; /* encoded (incl. rewritten ones kept in their type) */
    size_t n_kept_quantized, n_kept_rows, n_kept_source;
    uint64_t src_tensor_bytes, dst_tensor_bytes;
    uint64_t out_file_bytes; /* every part, headers included */
    uint32_t n_parts;
    uint32_t dominant_type; /* the type holding the most elements in the output */
    uint32_t file_type;     /* general.file_type written (LLAMA_FTYPE numbering) */
    unsigned threads;
    /* After a run (0 before). */
    int ran;
    double seconds;
    double mb_per_s;         /* source tensor bytes / seconds, in 1e6 bytes */
    uint64_t peak_rss_bytes; /* the process's peak resident set (getrusage) */
    /* Since ABI 1.1 (quantize): */
    size_t n_fallback; /* tensors whose row length forced another type */
    size_t n_dropped;  /* input tensors left out (--prune-layers) */
    int needs_imatrix; /* some tensor's type requires an importance matrix it does not have */
} anvil_transcode_summary;

typedef struct anvil_transcode anvil_transcode;

/* Plan src into the output at out_path (for a split set: the parts are
 * "<out_path without .gguf>-0000i-of-0000N.gguf"). Checks every type named in
 * the options (an encoder must exist: decode-only formats and activation
 * formats are refused with the reason), compiles the rules, decides every
 * tensor and lays out the output. src and ctx must outlive the plan. */
ANVIL_API int anvil_transcode_plan(anvil_transcode **out, anvil_ctx *ctx, const anvil_gguf *src, const char *out_path,
                                   const anvil_transcode_options *opts, anvil_error *err);
ANVIL_API void anvil_transcode_free(anvil_transcode *t);

ANVIL_API size_t anvil_transcode_count(const anvil_transcode *t);
ANVIL_API const anvil_transcode_tensor *anvil_transcode_tensor_at(const anvil_transcode *t, size_t i);
ANVIL_API void anvil_transcode_get_summary(const anvil_transcode *t, anvil_transcode_summary *out);
/* Path of output part i (0-based); one file: its path. */
ANVIL_API const char *anvil_transcode_part_path(const anvil_transcode *t, uint32_t i);

/* Write the output. Once per plan. Refuses up front when the destination's
 * file system has less free space than the output needs. */
ANVIL_API int anvil_transcode_run(anvil_transcode *t, anvil_error *err);

/* Quality summary by output type, after a run (type-id order). */
ANVIL_API size_t anvil_transcode_quality_count(const anvil_transcode *t);
ANVIL_API int anvil_transcode_quality_at(const anvil_transcode *t, size_t i, anvil_transcode_quality *out);

/* The run's quality pass again in another type, after a run: every tensor
 * the run converted is encoded in `type` and decoded back, with the run's
 * chunks, coders (importance weights included), threads and sums, so the
 * figures sit beside the run's own (anvil transcode --compare). out has
 * anvil_transcode_count(t) entries; a tensor not compared has NAN sums and
 * `why` says why (not converted, rows not a whole number of blocks, the
 * encoder's refusal). An error only for what stops every tensor. */
typedef struct anvil_transcode_alt_quality {
    double sum_sq_err, sum_sq_signal; /* NAN: not compared */
    double rmse, max_abs, snr_db;     /* snr_db is +inf when the error is exactly 0 */
    const char *why;                  /* NULL, or why not compared (static text) */
} anvil_transcode_alt_quality;
ANVIL_API int anvil_transcode_quality_as(anvil_transcode *t, uint32_t type, anvil_transcode_alt_quality *out,
                                         anvil_error *err);

/* Warnings the plan raised (a --tensor-type pattern that matches nothing, a
 * tensor without importance-matrix weights, ...), in order. */
ANVIL_API size_t anvil_transcode_warning_count(const anvil_transcode *t);
ANVIL_API const char *anvil_transcode_warning_at(const anvil_transcode *t, size_t i);

/* llama.cpp's general.file_type (LLAMA_FTYPE_*) for a model whose dominant
 * type is `type`, as llama.cpp's loader guesses it (k-quants: the _M mix);
 * -1 when llama.cpp has none. */
ANVIL_API int anvil_transcode_file_type(uint32_t type);

/* ---- merge-lora --------------------------------------------------------- */

/*
 * W' = W + (alpha / r) * B * A for every adapted weight (r: A's row count),
 * computed in double and rounded once. Adapters are safetensors files (a
 * file, or every *.safetensors in a folder), named either
 *   GGUF-style  "<gguf tensor>.lora_a" [r, in] and ".lora_b" [out, r]
 *               (as llama.cpp's LoRA adapters name them), or
 *   PEFT-style  "base_model.model.<hf module>.lora_A.weight" / ".lora_B.weight",
 *               mapped to GGUF names with the llama map (model.layers.N ->
 *               blk.N; self_attn.{q,k,v,o}_proj -> attn_{q,k,v,output};
 *               mlp.{gate,up,down}_proj -> ffn_{gate,up,down}) and the gpt2
 *               map (transformer.h.N -> blk.N; attn.c_attn -> attn_qkv;
 *               attn.c_proj -> attn_output; mlp.c_fc -> ffn_up; mlp.c_proj ->
 *               ffn_down).
 * A PEFT tensor without a lora_A/lora_B suffix is a module saved whole
 * (PEFT's modules_to_save, e.g. a classifier head): it replaces the base
 * tensor it maps to, as PEFT's merge does. Every adapter tensor must match a
 * base tensor of the right shape, or binding fails naming it. Quantized base
 * tensors are refused: merge on a float base, transcode afterwards.
 */
typedef struct anvil_lora anvil_lora;

/* Open adapters from a safetensors file or a folder of them. */
ANVIL_API int anvil_lora_open(anvil_lora **out, const char *file_or_dir, anvil_error *err);
ANVIL_API void anvil_lora_close(anvil_lora *l);

/* Match every adapter tensor to a tensor of base (which must outlive l) and
 * check shapes and types. alpha must be finite. */
ANVIL_API int anvil_lora_bind(anvil_lora *l, const anvil_gguf *base, double alpha, anvil_error *err);

typedef struct anvil_lora_target {
    const char *base_name; /* GGUF tensor it changes */
    const char *a_name;    /* adapter tensor names (b_name NULL for a whole replacement) */
    const char *b_name;
    uint32_t rank; /* 0 for a replacement */
    double scale;  /* alpha / rank (0 for a replacement) */
} anvil_lora_target;

ANVIL_API size_t anvil_lora_target_count(const anvil_lora *l);
ANVIL_API int anvil_lora_target_at(const anvil_lora *l, size_t i, anvil_lora_target *out);

/* The transcode hook that applies the bound adapters (valid while l lives). */
ANVIL_API anvil_transcode_hook anvil_lora_hook(anvil_lora *l);

/* GGUF name for an HF module path ("model.layers.3.self_attn.q_proj" ->
 * "blk.3.attn_q"), through the llama and gpt2 maps; a path neither map knows
 * is returned unchanged. 0 on success, -1 when buf is too small. */
ANVIL_API int anvil_lora_map_name(const char *hf_path, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_TRANSCODE_H */
