/* SPDX-License-Identifier: MIT */
/*
 * Internal: what the files of the Hugging Face converter share (hf_*.c).
 *
 * hf_folder.c reads a checkpoint folder (config.json, the safetensors shards
 * and their index) into an hf_folder: the tensors in the order
 * convert_hf_to_gguf.py visits them (parts sorted by file name, each part's
 * tensors sorted by name). hf_arch.c and one file per architecture family
 * that transforms tensors (hf_moe, hf_gemma, hf_phi3, hf_gptoss, hf_deepseek,
 * hf_glm4moe, hf_qwen35) know the hparams KVs, tensor names, which tensors stay F32,
 * llama's Q/K permutation and Llama 3 rope factors. hf_meta.c derives the general.* keys and the output file
 * name as gguf-py's metadata.py and utility.py do. hf_convert.c runs it all.
 */
#ifndef ANVIL_HOST_HF_INTERNAL_H
#define ANVIL_HOST_HF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "anvil/safetensors.h"
#include "json.h"

/* ---- the folder ----------------------------------------------------------- */

typedef struct hf_src_tensor {
    char *name;                   /* the checkpoint's name (after convert's filters) */
    const anvil_st_tensor *st;    /* view into its part */
    size_t part;                  /* index into hf_folder.part_names */
    const anvil_st_tensor *scale; /* FP8: its weight_scale_inv, else NULL */
} hf_src_tensor;

typedef struct hf_folder {
    char *dir;                /* as given, without trailing '/' */
    anvil_json_value *config; /* config.json */
    char **part_names;        /* sorted */
    anvil_st **parts;
    size_t n_parts;
    hf_src_tensor *tensors; /* convert's order */
    size_t n_tensors;
    uint64_t fp8_block[2]; /* quantization_config.weight_block_size, or 0 0 */
    uint64_t mtp_seen;     /* Qwen3.5: 1 + the highest mtp.layers.N (hf_qwen35_filter), or 0 */
    int mtp_mode;          /* HF_MTP_ALL, HF_MTP_ONLY (--mtp), HF_MTP_NONE (--no-mtp) */
} hf_folder;

enum { HF_MTP_ALL = 0, HF_MTP_ONLY = 1, HF_MTP_NONE = 2 };


int hf_folder_open(const char *dir, hf_folder *f, anvil_error *err);
/* hf_folder_open in two steps: the folder and config.json (so the
 * architecture can be checked before any shard is read), then the shards
 * indexed (O(n log n) in tensors): the parts, their tensors, the index's
 * agreement, k-of-N shard sets complete, FP8 scales paired. */
int hf_folder_open_config(const char *dir, hf_folder *f, anvil_error *err);
int hf_folder_index(hf_folder *f, anvil_error *err);
void hf_folder_close(hf_folder *f);
/* dir + "/" + name, malloc'd (NULL when out of memory). */
char *hf_path_join(const char *dir, const char *name);
/* 1 when dir/name exists (as anything: its reader refuses a FIFO or a folder by name). */
int hf_file_exists(const char *dir, const char *name);

/* Block-scaled FP8 checkpoints (quantization_config.quant_method "fp8"):
 * pair each *_scale_inv with its weight and drop it and the activation
 * scales from the list, as convert's dequant_model does. */
int hf_fp8_pair(hf_folder *f, anvil_error *err);
/* A checkpoint tensor read row by row (rows: its first dim) as f32:
 * F32/F16/BF16 decoded exactly, FP8 times its block scales (dequant_simple,
 * in float32). */
typedef struct hf_reader {
    const hf_folder *f;
    const hf_src_tensor *s;
    uint64_t rows, row_len;
    float *scale;   /* FP8: the decoded scales */
    float lut[256]; /* FP8: each byte's value */
} hf_reader;
int hf_reader_open(hf_reader *rd, const hf_folder *f, const hf_src_tensor *s, anvil_error *err);
void hf_reader_row(const hf_reader *rd, uint64_t row, float *dst);
/* n values from flat element `at` on (row-major), decoded and scaled as
 * hf_reader_row's; any run, not only whole rows. */
void hf_reader_span(const hf_reader *rd, uint64_t at, uint64_t n, float *dst);
void hf_reader_close(hf_reader *rd);

/* ---- config.json values (hf_config.c) ------------------------------------- */

/* 1 when s ends with suffix. */
int hf_ends_with(const char *s, const char *suffix);
/* obj[key] as a whole number in [0, 2^32): 1 present, 0 absent or null
 * (an error naming the class cls when required), or an error when
 * mistyped. */
int hf_cfg_u32(const hf_folder *f, const anvil_json_value *obj, const char *key, const char *cls, int required,
               uint32_t *out, anvil_error *err);
/* obj[key] as a number: 1 present, 0 absent or null, or an error. */
int hf_cfg_num(const hf_folder *f, const anvil_json_value *obj, const char *key, double *out, anvil_error *err);
/* Python truthiness of a JSON value (null/false/0/""/[]/{} are false). */
int hf_truthy(const anvil_json_value *v);
/* TextModel's rope_parameters: config's rope_parameters, else rope_scaling
 * (null is {}); NULL when that is not an object. */
const anvil_json_value *hf_cfg_rope_params(const hf_folder *f);
/* The rope dimension count: head_dim (else hidden_size /
 * num_attention_heads) times rope_parameters' partial_rotary_factor (the
 * top level's partial_rotary_factor / rope_pct / rope_percent mirrored in;
 * dflt when none), truncated as int() does. Errors name config.json, the
 * key and the class cls. */
int hf_cfg_rope_dims(const hf_folder *f, const char *cls, double dflt, uint32_t *out, anvil_error *err);

/* ---- architectures ---------------------------------------------------------- */

typedef enum hf_arch_id {
    HF_ARCH_LLAMA,
    HF_ARCH_QWEN2,
    HF_ARCH_QWEN3,
    HF_ARCH_QWEN2MOE,
    HF_ARCH_QWEN3MOE,
    HF_ARCH_MIXTRAL,
    HF_ARCH_GEMMA2,
    HF_ARCH_GEMMA3,
    HF_ARCH_PHI3,
    HF_ARCH_GPTOSS,
    HF_ARCH_DEEPSEEK2,
    HF_ARCH_GLM4MOE,
    HF_ARCH_QWEN35,
    HF_ARCH_QWEN35MOE,
    HF_ARCH_QWEN3NEXT
} hf_arch_id;

typedef struct hf_arch {
    const char *hf_name; /* "LlamaForCausalLM" */
    hf_arch_id id;
    const char *gguf_name; /* "llama" */
    int undo_permute;      /* llama's Q/K rows permutation (LlamaModel and its classes) */
    const char *vocab_as;  /* the class whose set_vocab path convert takes */
} hf_arch;

/* The architecture of config.json's "architectures"[0]; an error naming
 * the supported ones otherwise. */
int hf_arch_find(const anvil_json_value *config, const char *config_path, const hf_arch **out, anvil_error *err);

/* What convert turns into another model and anvil does not convert: an
 * EAGLE-3 draft (LlamaModel), a Qwen3 reranker (Qwen3Model's rule; not for
 * --vocab-only, whose output convert does not change for it). An error
 * saying why, before anything is planned. */
int hf_arch_refuse_variants(const hf_arch *a, const hf_folder *f, int vocab_only, anvil_error *err);

/* --mtp / --no-mtp (hf_mtp.c): refused (as convert_hf_to_gguf.py refuses
 * them) for a class without MTP export or when both are given; else
 * f->mtp_mode set. */
int hf_mtp_mode(const hf_arch *a, hf_folder *f, int mtp_only, int no_mtp, anvil_error *err);
/* Glm4MoeModel.filter_tensors' MTP rule: model.layers.N with N >= the
 * config's layer count is an MTP layer's; --no-mtp drops those, --mtp
 * keeps only those and the embeddings, output norm and head (other
 * classes: nothing, the Qwen3.5 ones drop in hf_qwen35_filter). O(n). */
int hf_mtp_filter(const hf_arch *a, hf_folder *f, anvil_error *err);
/* 1 for the tensors --mtp keeps beside the MTP layers' (model.embed_tokens,
 * model.norm, lm_head). */
int hf_mtp_keep_shared(const char *name);
/* Remove the tensors with drop[i] != 0 from f->tensors, keeping the order. */
void hf_mtp_compact(hf_folder *f, const unsigned char *drop);

/* A run of a source tensor's elements (flat, row-major) that an output
 * tensor is made of: experts stacked, or one half of a fused gate_up. */
typedef struct hf_piece {
    int src;           /* index into hf_folder.tensors */
    uint64_t off, len; /* elements */
} hf_piece;

/* One output tensor before conversion. */
typedef struct hf_out_tensor {
    char name[64];
    int src; /* index into hf_folder.tensors, -1 for a generated one */
    /* a composed tensor (pieces): the source tensor current when convert
     * yields it (the name its tensor_force_quant sees: stacked experts,
     * the layer's last expert tensor visited) */
    int yield_src;
    uint32_t n_dims;
    uint64_t ne[4]; /* ggml order (innermost first) */
    uint64_t n_elements;
    int permute_heads; /* > 0: llama Q/K permutation with this many heads */
    uint32_t type;     /* ggml type written */
    float *generated;  /* data of a generated tensor (rope_freqs), malloc'd */
    hf_piece *pieces;  /* a composed tensor (src -1): its pieces in order, malloc'd */
    size_t n_pieces;
    /* Gemma's norms (stored centred on zero): added to each value as
     * convert's data_torch + 1 does (f16 sources: the sum rounded to f16;
     * bf16 ones are float32 by then); 0: none */
    float shift;
    /* n_elements may hold fewer rows than the source (Gemma 3 cuts
     * token_embd to the vocabulary): the first rows are read */
    /* gpt-oss (hf_gptoss.c). mxfp4: an MXFP4 tensor repacked from
     * the U8 tensors src (*_blocks, [E, R, nb, 16]) and mx_scales
     * ([E, R, nb]), rows r * mx_step + mx_off of dim 1. strided: a view
     * of src (whole experts = its first dim): output (e, r, c) is element
     * s_base + r * s_r + c * s_c of source expert e. */
    int mxfp4, mx_scales;
    uint32_t mx_step, mx_off;
    int strided;
    uint64_t s_r, s_c, s_base;
    /* > 0: each piece is tr_rows source rows, written transposed (the
     * converter's k_b_proj: kv_b split per head, then transpose(1, 2)) */
    uint64_t tr_rows;
    /* Qwen3.5's linear attention (hf_qwen35.c), vr_k > 0: V heads moved
     * from grouped to tiled order (units of vr_d, [vr_k, vr_r] ->
     * [vr_r, vr_k]) from row (vr_cols 0) or column (1) vr_first on;
     * neg_exp: -exp(x) as PyTorch's CPU kernel computes it (A_log). */
    uint64_t vr_k, vr_r, vr_d, vr_first;
    int vr_cols, neg_exp;
    /* Qwen3-Next's fused in_proj_qkvz (hf_qwen35.c), qz_k > 0: source rows
     * in qz_k key-head groups of [q qz_dk, k qz_dk, v qz_vd, z qz_vd]; the
     * output gathers them as q of every group, then k, then v (qz_z 0:
     * attn_qkv) or the z rows (qz_z 1: attn_gate). */
    uint64_t qz_k, qz_dk, qz_vd;
    int qz_z;
} hf_out_tensor;

/* Plans' shared pieces (hf_plan_common.c). hf_out_fill: o's source, rank,
 * element count and shape from safetensors tensor i (GGUF order is the
 * reverse). hf_src_check: tensor s is one convert reads as a plain
 * weight (F32, F16, BF16, or 2-D block-scaled FP8 with its
 * weight_scale_inv) and of 1 to 4 dims, else an error naming it.
 * hf_plan_free: a plan's first n entries' buffers and the array.
 * hf_src_dropped: a tensor convert drops from every model (ModelBase's
 * masked_bias, attention.bias and rotary_emb.inv_freq). */
int hf_src_dropped(const char *name);
void hf_out_fill(const hf_folder *f, size_t i, hf_out_tensor *o);
int hf_src_check(const hf_folder *f, const hf_src_tensor *s, anvil_error *err);
void hf_plan_free(hf_out_tensor *ts, size_t n);

/* The tensors convert writes, in its order, with their GGUF names, shapes
 * and permutation (hf_convert.c chooses their types). */
int hf_arch_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);
/* Mixture-of-experts classes (hf_moe.c): convert's modify_tensors for
 * experts. hf_moe_take: 1 when source tensor i is an expert tensor (its
 * outputs, 0 to 3, appended to ts[*n] on: the stacked experts once a
 * layer's last one is seen, or a fused gate_up split in two), 0 when it
 * goes through the name map, or an error. hf_moe_done: an error naming
 * the tensors left unstacked (an expert missing). */
typedef struct hf_moe_state hf_moe_state;
int hf_moe_begin(const hf_arch *a, const hf_folder *f, uint64_t n_blocks, hf_moe_state **out, anvil_error *err);
int hf_moe_take(hf_moe_state *st, size_t i, hf_out_tensor *ts, size_t *n, anvil_error *err);
int hf_moe_done(hf_moe_state *st, anvil_error *err);
void hf_moe_free(hf_moe_state *st);
int hf_arch_is_moe(const hf_arch *a);

/* Gemma2ForCausalLM / Gemma3ForCausalLM (hf_gemma.c): Gemma2Model's and
 * Gemma3Model's set_gguf_parameters (with TextModel's keys first for Gemma
 * 3, overwritten in place as gguf-py's dict does) and their tensors (names
 * from the generated table, norms shifted by 1, lm_head dropped for Gemma
 * 2, token_embd cut to the vocabulary for Gemma 3). */
int hf_gemma_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err);
int hf_gemma_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);
int hf_arch_is_gemma(const hf_arch *a);

/* GptOssForCausalLM (hf_gptoss.c): GptOssModel's tensors (MXFP4 experts
 * repacked first, then the rest in convert's order) and whether the
 * checkpoint is MXFP4 (quant_method "mxfp4": file type MOSTLY_MXFP4_MOE
 * for f32/f16/bf16 outputs). */
int hf_gptoss_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);
int hf_gptoss_is_mxfp4(const hf_folder *f);

/* The architecture's hparams KVs, in set_gguf_parameters' order, ending with
 * general.file_type (ftype) and the arch's own keys. */
/* The hparams KVs of the classes hf_arch.c keys itself (llama, qwen2/3
 * and their MoE); Gemma (hf_gemma.c) and Phi3 (hf_phi3.c) key their own,
 * chosen by the caller, so that calls go one way: those files use
 * hf_arch.c's helpers, never the reverse. */
int hf_arch_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err);
/* config.json keys of variants no class here converts, refused by name. */
int hf_arch_refuse_unhandled(const hf_arch *a, const hf_folder *f, anvil_error *err);
/* The block count config.json gives (n_layers / num_hidden_layers / ...). */
int hf_arch_block_count(const hf_folder *f, uint64_t *out, anvil_error *err);

/* DeepseekV3ForCausalLM (hf_deepseek.c): DeepseekV2Model's
 * set_gguf_parameters (TextModel's keys with one KV head, then MLA and
 * MoE keys) and its tensors (MTP layers skipped, experts stacked, kv_b
 * split into k_b, transposed, and v_b). */
int hf_deepseek_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err);
int hf_deepseek_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);
/* Glm4MoeForCausalLM (hf_glm4moe.c): Glm4MoeModel's set_gguf_parameters
 * (TextModel's keys with the MTP layers in block_count, then the partial
 * rope dimension and MoE keys) and its tensors (MTP layers kept as
 * blk.N.nextn.*, experts stacked). */
int hf_glm4moe_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err);
int hf_glm4moe_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);
/* Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM / Qwen3NextForCausalLM
 * (hf_qwen35.c): the converter's filter_tensors for the MTP tensors (mtp.*
 * renamed to layers past num_hidden_layers, in place, before planning;
 * --mtp / --no-mtp applied), Qwen3NextModel's set_gguf_parameters (with
 * Qwen3.5's rope sections), and the tensors (Qwen3.5: V heads reordered;
 * Qwen3-Next: in_proj_qkvz split; A_log as -exp, norms + 1, experts
 * stacked). */
int hf_qwen35_filter(const hf_arch *a, hf_folder *f, anvil_error *err);
int hf_qwen35_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err);
int hf_qwen35_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err);
/* PyTorch 1.13's float exp on x86 (Sleef_expf8_u10, AVX2 with FMA), bit
 * for bit. */
float hf_torch_expf(float d);
/* TextModel.set_gguf_parameters' keys without general.file_type, with a
 * subclass's later values in place (gguf-py's KV dict keeps a key where it
 * was first set): kv_one: head_count_kv 1 (DeepseekV2Model sets it
 * first); rms_default: rms_norm_eps when config.json has none (0: no);
 * key_length, value_length, expert_count >= 0: written instead of the
 * config's value where TextModel writes one (wrote_*: 1 when it did). */
typedef struct hf_text_over {
    int kv_one;
    double rms_default;
    int64_t key_length, value_length, expert_count;
    int wrote_key_length, wrote_expert_count;
    uint32_t extra_blocks; /* added to block_count (Glm4MoeModel: its MTP layers) */
    int64_t gating;        /* >= 0: expert_gating_func written with this value where TextModel writes one */
    int wrote_gating;
} hf_text_over;
int hf_arch_text_hparams(const hf_arch *a, const hf_folder *f, hf_text_over *o, anvil_gguf_writer *w,
                         anvil_error *err);

/* ---- general.* metadata and the file name ------------------------------------ */

typedef struct hf_meta_opts {
    const char *model_name;    /* --model-name, or NULL */
    const char *metadata_path; /* --metadata, or NULL */
    /* get_total_parameter_count's MoE figures: with expert_count > 0 the
     * size label is "<expert_count>x<shared + one expert's params>" */
    int64_t moe_params;
    uint64_t expert_count;
} hf_meta_opts;

typedef struct hf_meta hf_meta;

/* Gather what metadata.py's Metadata.load gathers (generation_config.json,
 * config.json's _name_or_path, the folder name, the override file,
 * --model-name) for a model of total_params parameters. */
int hf_meta_load(const hf_folder *f, const hf_meta_opts *o, int64_t total_params, hf_meta **out, anvil_error *err);
void hf_meta_free(hf_meta *m);
/* Write the general.* keys in set_gguf_meta_model's order. */
int hf_meta_write(const hf_meta *m, anvil_gguf_writer *w, anvil_error *err);
/* naming_convention(): "<Name>-<size>-<finetune>-<version>-<TYPE>" (vocab:
 * "...-vocab") into buf. */
int hf_meta_default_name(const hf_meta *m, const char *output_type, int vocab_only, char *buf, size_t cap,
                         anvil_error *err);
/* The --mtp export's name (Glm4MoeModel / _QwenMtpMixin.prepare_metadata):
 * "mtp-<Name>-<finetune>-<version>-<TYPE>.gguf", no size label, the type
 * for --vocab-only too. */
int hf_meta_mtp_name(const hf_meta *m, const char *output_type, char *buf, size_t cap, anvil_error *err);
/* size_label() of a parameter count ("656K", "1.0M", "8.0B"). */
void hf_size_label(int64_t total_params, char *buf, size_t cap);
/* fill_templated_filename(): {ftype} {outtype} {} (lower case), {FTYPE}
 * {OUTTYPE} (upper case), {{ and }}; any other field is an error. */
int hf_fill_template(const char *name, const char *output_type, char *buf, size_t cap, anvil_error *err);

#endif
