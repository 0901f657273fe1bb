/* SPDX-License-Identifier: MIT */
/*
 * anvil — llama-quantize's job, byte for byte: presets (Q4_K_M, IQ3_M, ...),
 * llama.cpp's per-tensor type policy, importance matrices, fallbacks,
 * overrides, tensor order.
 *
 * The reference is llama.cpp's llama_model_quantize (the same release as the
 * ggml anvil's codecs match). A quantize plan is a transcode plan with
 * llama.cpp's policy instead of transcode's conservative one: the same
 * engine lays it out and streams it (anvil_transcode_run, _count,
 * _tensor_at, _get_summary, ... in transcode.h all apply).
 *
 * What the plan reproduces:
 *  - tensor order: llama.cpp's loader sorts tensors by layer number (the
 *    %d of a leading "blk.%d.", -1 for others) and then by name; with
 *    keep_split, by input part and offset instead;
 *  - which tensors may change type (2+ dims, a name ending in "weight",
 *    not a norm, not ffn_gate_inp, and llama.cpp's list of small or special
 *    tensors), the preset's mixture (attn_v / ffn_down / output /
 *    token_embd rules by layer, GQA, expert count, architecture), the
 *    --tensor-type, output and token-embedding overrides, and the fallback
 *    chain for rows that do not divide the target's block;
 *  - metadata: every input key (bools written as 0/1, strings up to a NUL,
 *    as ggml rewrites them), then general.quantization_version = 2 and
 *    general.file_type = the preset, split keys removed, the --override-kv
 *    values (int as u32 of |v|, float as f32), the quantize.imatrix.* keys,
 *    {arch}.block_count after --prune-layers, and split keys with keep_split;
 *  - the importance matrix handed to the encoders per tensor, per expert.
 *
 * Deliberate differences (llama.cpp would crash or write a broken file):
 * a type that cannot be encoded (activation formats, integers, a row length
 * the chosen type does not divide) is refused at plan time; an input whose
 * general.alignment is not 32 is written with that alignment (llama.cpp pads
 * to 32 and keeps the key, so its output does not load); a key made empty
 * or "general.alignment" in --override-kv is refused; an output path equal
 * to the input is allowed (written to a temporary file and renamed).
 */
#ifndef ANVIL_QUANTIZE_H
#define ANVIL_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "anvil/transcode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- presets (llama.cpp's LLAMA_FTYPE numbering) -------------------------- */

typedef struct anvil_quantize_preset {
    const char *name; /* as llama-quantize spells it: "Q4_K_M", "COPY" */
    uint32_t ftype;   /* LLAMA_FTYPE_*: general.file_type */
    const char *desc;
} anvil_quantize_preset;

/* llama-quantize's list, in its order (aliases such as Q4_K included). */
ANVIL_API size_t anvil_quantize_preset_count(void);
ANVIL_API const anvil_quantize_preset *anvil_quantize_preset_at(size_t i);
/* A preset by name (case-insensitive) or number, as llama-quantize reads
 * TYPE: a number names the first preset with that file type ("15" is Q4_K,
 * "0" is F32, not COPY). NULL when none. */
ANVIL_API const anvil_quantize_preset *anvil_quantize_preset_find(const char *s);
/* The type a file type's tensors default to (q4_K for Q4_K_M, iq2_xs for
 * IQ2_S, ...), or ANVIL_TRANSCODE_NO_TYPE for a number that is no preset. */
ANVIL_API uint32_t anvil_quantize_default_type(uint32_t ftype);

/* ---- option strings --------------------------------------------------------- */

/* llama_model_kv_override_type. */
typedef enum anvil_kv_override_tag {
    ANVIL_KV_OVERRIDE_INT = 0,
    ANVIL_KV_OVERRIDE_FLOAT = 1,
    ANVIL_KV_OVERRIDE_BOOL = 2,
    ANVIL_KV_OVERRIDE_STR = 3
} anvil_kv_override_tag;

typedef struct anvil_kv_override {
    anvil_kv_override_tag tag;
    char key[128]; /* at most 127 bytes */
    int64_t i;     /* INT (atol of the text, as llama.cpp) */
    double f;      /* FLOAT (atof) */
    int b;         /* BOOL */
    char str[128]; /* STR: at most 127 bytes */
} anvil_kv_override;

/* "KEY=TYPE:VALUE" with TYPE int, float, bool (true/false) or str, as
 * llama.cpp's --override-kv reads it. */
ANVIL_API int anvil_kv_override_parse(const char *s, anvil_kv_override *out, anvil_error *err);

/* "REGEX=TYPE" as llama-quantize's --tensor-type reads it (the one parser of
 * that option: `anvil quantize` and `anvil transcode` both use it): the
 * pattern is everything before the first '=', lower-cased (so a pattern
 * cannot contain '=', and \D reads as \d, as in llama-quantize); TYPE is a
 * ggml type name (case-insensitive; with ctx, plugins' types too). The
 * pattern is checked as an ECMAScript regex. An error message starts with
 * the argument quoted. *pattern is malloc'd (free it). */
ANVIL_API int anvil_quantize_parse_tensor_type(const anvil_ctx *ctx, const char *arg, char **pattern, uint32_t *type,
                                               anvil_error *err);
/* Check a tensor-name pattern: ECMAScript, as llama.cpp's std::regex reads
 * it (transcode's and quantize's --tensor-type). ANVIL_E_INVALID_ARG with
 * the reason when it does not compile. */
ANVIL_API int anvil_tensor_pattern_check(const char *pattern, anvil_error *err);

/* A --tensor-type-file's text: PATTERN=TYPE items separated by white space.
 * Appends to *rules / *n (growing the malloc'd array); free with
 * anvil_quantize_rules_free. */
ANVIL_API int anvil_quantize_parse_tensor_type_file(const anvil_ctx *ctx, const char *text, size_t len,
                                                    anvil_transcode_rule **rules, size_t *n, anvil_error *err);
ANVIL_API void anvil_quantize_rules_free(anvil_transcode_rule *rules, size_t n);

/* ---- importance matrices ------------------------------------------------------- */

/*
 * Both formats llama-quantize reads: GGUF (tensors "<name>.in_sum2" [n,
 * n_mat] and "<name>.counts" [1, n_mat], F32; keys imatrix.datasets,
 * imatrix.chunk_count, imatrix.chunk_size) and the legacy .dat (i32 count,
 * then per entry: i32 name length, name, i32 ncall, i32 nval, nval f32;
 * optionally i32 chunk count, i32 length, dataset name). Values are
 * normalised as llama-quantize does: GGUF sums divided by their expert's
 * count (1 where the count is 0); legacy values divided by ncall. Every
 * wire value is checked; a malformed file is an error naming the entry.
 */
typedef struct anvil_imatrix anvil_imatrix;

typedef struct anvil_imatrix_entry {
    const char *name;
    const float *values; /* n_values, finite and >= 0 not guaranteed: checked at plan time */
    size_t n_values;
} anvil_imatrix_entry;

ANVIL_API int anvil_imatrix_load(anvil_imatrix **out, const char *path, anvil_error *err);
/* The same from memory (the bytes are copied). */
ANVIL_API int anvil_imatrix_load_buffer(anvil_imatrix **out, const void *data, size_t size, anvil_error *err);
ANVIL_API void anvil_imatrix_free(anvil_imatrix *im);
/* --include-weights / --exclude-weights: keep only entries whose name
 * contains one of include (when any), then drop those containing one of
 * exclude; llama-quantize refuses both together, so does this. */
ANVIL_API int anvil_imatrix_filter(anvil_imatrix *im, const char *const *include, size_t n_include,
                                   const char *const *exclude, size_t n_exclude, anvil_error *err);
ANVIL_API size_t anvil_imatrix_count(const anvil_imatrix *im);
/* Entries in name order. */
ANVIL_API int anvil_imatrix_entry_at(const anvil_imatrix *im, size_t i, anvil_imatrix_entry *out);
ANVIL_API const anvil_imatrix_entry *anvil_imatrix_find(const anvil_imatrix *im, const char *name);
ANVIL_API int anvil_imatrix_is_legacy(const anvil_imatrix *im);
/* The chunk count it was computed on (0 when unknown). */
ANVIL_API int32_t anvil_imatrix_chunk_count(const anvil_imatrix *im);
ANVIL_API size_t anvil_imatrix_dataset_count(const anvil_imatrix *im);
ANVIL_API const char *anvil_imatrix_dataset_at(const anvil_imatrix *im, size_t i);

/* ---- the plan --------------------------------------------------------------------- */

typedef struct anvil_quantize_options {
    uint32_t ftype;                /* LLAMA_FTYPE (a preset's ftype) */
    int only_copy;                 /* COPY: every tensor as it is, file type from the input */
    uint32_t output_tensor_type;   /* --output-tensor-type, or ANVIL_TRANSCODE_NO_TYPE */
    uint32_t token_embedding_type; /* --token-embedding-type, or NO_TYPE */
    int allow_requantize;
    int leave_output_tensor;
    int pure;
    int keep_split;                           /* one output part per input part */
    int dry_run;                              /* plan only: a missing importance matrix is noted, not refused */
    const anvil_transcode_rule *tensor_types; /* --tensor-type, ECMAScript, first match wins */
    size_t n_tensor_types;
    const anvil_kv_override *kv_overrides;
    size_t n_kv_overrides;
    const int32_t *prune_layers; /* layer numbers to drop (any order, duplicates ignored) */
    size_t n_prune_layers;
    const anvil_imatrix *imatrix; /* after --include/--exclude-weights; NULL or empty: none */
    const char *imatrix_path;     /* for quantize.imatrix.file */
    unsigned threads;             /* 0: anvil_ctx_threads(ctx) */
    int skip_quality;
    anvil_transcode_progress_fn progress;
    void *progress_arg;
    /* anvil's own (not llama-quantize's): */
    int no_fallback; /* refuse a preset's row-length fallback, naming each tensor */
    /* A size budget instead of a preset (ftype is then ignored): every free
     * tensor's type (one no --tensor-type, --output-tensor-type or
     * --token-embedding-type fixes) chosen among every type llama.cpp runs
     * on the CPU, by measured error (sum (W-Q)^2 m_j, m_j the importance
     * matrix), so that the file takes at most target_size bytes, or at most
     * target_bpw * parameters / 8 bytes. general.file_type is then
     * LLAMA_FTYPE_GUESSED (1024) and quantize.target_size or
     * quantize.target_bpw says how it was made. keep_split is refused. With
     * pure: one type for every free tensor, the largest that fits. */
    uint64_t target_size;        /* 0: none */
    double target_bpw;           /* 0: none */
    uint64_t target_sample_rows; /* rows measured per tensor: 0 automatic, UINT64_MAX every row */
    const char *target_weights;  /* "ROLE=W,...": scales a role's predicted error (roles: token_embd,
                                    attn_q, attn_k, attn_v, attn_qkv, attn_kv_b, attn_output, ffn_up,
                                    ffn_gate, ffn_down, output, other), or NULL */
    /* Measured error weights (anvil_quantize_sens_parse), or NULL for the
     * role weights: each free tensor's predicted error is then its relative
     * error times kld / relerr(ref), its own measured KL divergence under the
     * reference type's error over that type's relative error measured here
     * (target_weights is then ignored). Every free tensor must be in it. */
    const struct anvil_quantize_sens *sensitivity;
    /* The target's candidate types only those of at least this many bits
     * per weight (0: all); --verify plans with a few such floors and keeps
     * the one the forward pass finds best. */
    double target_min_bpw;
    /* Measured candidate errors kept across target plans of one source and
     * importance matrix (anvil_quantize_cache_new), or NULL: --verify's
     * floored variants measure nothing twice. The same choices either way. */
    struct anvil_quantize_cache *target_cache;
} anvil_quantize_options;

/* A cache of measured candidate errors for target plans of one source file
 * and one importance matrix (keyed by tensor name, type and rows sampled);
 * not thread-safe: one plan at a time. */
typedef struct anvil_quantize_cache anvil_quantize_cache;
ANVIL_API anvil_quantize_cache *anvil_quantize_cache_new(void);
ANVIL_API void anvil_quantize_cache_free(anvil_quantize_cache *c);
/* The relative errors the cache holds for tensor name, every candidate type
 * measured, as a sensitivity file's version 3 "err" member (docs/
 * SENSITIVITY.md): {"key": "...", "types": [...], "relerr": [...]} (numbers
 * that round-trip exactly), into buf as snprintf would; the length it
 * needs back, 0 when the cache has none for the tensor. */
ANVIL_API size_t anvil_quantize_cache_err_json(const anvil_quantize_cache *c, const struct anvil_ctx *ctx,
                                               const char *name, char *buf, size_t size);

/* A sensitivity file (docs/SENSITIVITY.md): per weight tensor the mean KL
 * divergence of the model's output when that tensor alone carries a
 * reference type's quantization error. Parsed as hostile input: version,
 * every number checked (finite, >= 0, in range), names unique, shapes of
 * 1-4 dimensions. A file that does not fit the model is refused when the
 * plan is made, naming the tensor. */
typedef struct anvil_quantize_sens anvil_quantize_sens;
ANVIL_API int anvil_quantize_sens_parse(anvil_quantize_sens **out, const void *data, size_t len, anvil_error *err);
ANVIL_API void anvil_quantize_sens_free(anvil_quantize_sens *s);
ANVIL_API size_t anvil_quantize_sens_count(const anvil_quantize_sens *s);
/* The file's version: 1 (one reference type per tensor: the plan scales its
 * KL divergence linearly in the relative error) or 2 (two, a reference and a
 * low-bit one: a response curve fitted per tensor); 0 for NULL. */
ANVIL_API int anvil_quantize_sens_version(const anvil_quantize_sens *s);

/* Every type NO_TYPE, ftype Q8_0 (llama.cpp's default), the rest zero. */
ANVIL_API void anvil_quantize_options_init(anvil_quantize_options *o);

/* Plan src into out_path, as llama_model_quantize(src, out_path, params)
 * would write it. With keep_split the parts are
 * "<out_path>-0000i-of-0000N.gguf" (llama-quantize's CLI strips ".gguf"
 * from OUT first). src, ctx and the options' imatrix must outlive the plan. */
ANVIL_API int anvil_quantize_plan(anvil_transcode **out, anvil_ctx *ctx, const anvil_gguf *src, const char *out_path,
                                  const anvil_quantize_options *opts, anvil_error *err);

/* A target plan's predicted error of tensor i (0 for the tensors it did not
 * choose); ANVIL_E_INVALID_ARG for a plan made without a target. */
ANVIL_API int anvil_quantize_predicted_error(const anvil_transcode *t, size_t i, double *out);
/* The types a target plan chose, as a --tensor-type-file llama-quantize
 * reads: one "^name$=type" a line (the name's regex metacharacters
 * escaped), for every tensor the target chose. llama-quantize with these
 * rules (any quantized preset TYPE, the same --imatrix) writes the same
 * tensors. For a preset's plan: every tensor it encodes, the same way. */
ANVIL_API int anvil_quantize_write_plan(const anvil_transcode *t, const char *path, anvil_error *err);
/* A target plan's budget in bytes (the file's, after --target-bpw is
 * turned into bytes); ANVIL_E_INVALID_ARG for a plan made without a target. */
ANVIL_API int anvil_quantize_target_info(const anvil_transcode *t, uint64_t *budget_bytes);
/* A target plan's note for the user ("the budget is above F16 ..."), or NULL. */
ANVIL_API const char *anvil_quantize_target_note(const anvil_transcode *t);

/* ANVIL_OK, or ANVIL_E_INVALID_ARG saying what is wrong with a
 * --target-weights spec ("ROLE=WEIGHT,...": a known role, a decimal weight
 * >= 0, none empty), so a command can refuse it as a usage error. */
ANVIL_API int anvil_quantize_check_target_weights(const char *spec, anvil_error *err);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_QUANTIZE_H */
