/* SPDX-License-Identifier: MIT */
/*
 * Internal to the tokenizer module (hf_vocab*.c, see hf_vocab.h): what its
 * files share. hf_vocab.c picks the converter's path and owns the KV list;
 * hf_vocab_spm.c reads tokenizer.model; hf_vocab_bpe.c reads tokenizer.json's
 * vocabulary (LlamaHfVocab, get_vocab_base) and names the pre-tokenizer;
 * hf_vocab_special.c is gguf-py's SpecialVocab.
 *
 * The KV list has Python dict semantics, as gguf-py's GGUFWriter: setting a
 * key that is already there replaces its value in place (anvil's writer
 * would move it to the end); an empty string or array is not set at all.
 */
#ifndef ANVIL_HOST_HF_VOCAB_INTERNAL_H
#define ANVIL_HOST_HF_VOCAB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "hf_internal.h"
#include "json.h"
#include "hf_vocab.h"

/* SentencePiece / gguf token types (gguf.TokenType). */
enum { HV_NORMAL = 1, HV_UNKNOWN = 2, HV_CONTROL = 3, HV_USER_DEFINED = 4, HV_UNUSED = 5, HV_BYTE = 6 };

/* Strings that live as long as the vocab: a list of blocks. */
typedef struct hv_block hv_block;
typedef struct hv_arena {
    hv_block *head;
} hv_arena;
/* Copy of s[0..n) with a NUL after it; NULL when out of memory. */
char *hv_dup(hv_arena *a, const char *s, size_t n);
/* printf into the arena. */
char *hv_printf(hv_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hv_arena_free(hv_arena *a);

/* One KV as gguf-py would write it. */
typedef struct hv_kv {
    const char *key;            /* arena */
    uint32_t type;              /* U32, BOOL, STRING or ARRAY */
    uint32_t elem;              /* ARRAY: STRING, F32 or I32 */
    uint32_t u;                 /* U32, BOOL (0/1) */
    anvil_gguf_str s;           /* STRING */
    const anvil_gguf_str *strs; /* ARRAY of STRING */
    const void *nums;           /* ARRAY of F32 / I32 */
    uint64_t count;             /* ARRAY */
} hv_kv;

struct anvil__hf_vocab {
    hv_arena arena;
    const char *kind; /* "spm", "llama-hf", "gpt2" */
    const char *pre;  /* tokenizer.ggml.pre */
    hv_kv *kvs;
    size_t n_kvs, cap_kvs;
    anvil_gguf_str *tokens; /* tokenizer.ggml.tokens */
    float *scores;          /* NULL for gpt2 */
    int32_t *types;
    uint64_t n_tokens;
    anvil_gguf_str *merges;
    uint64_t n_merges;
};

/* Set a KV with dict semantics (see above). The key is copied. */
int hv_set_u32(anvil__hf_vocab *v, const char *key, uint32_t u, anvil_error *err);
int hv_set_bool(anvil__hf_vocab *v, const char *key, int b, anvil_error *err);
int hv_set_str(anvil__hf_vocab *v, const char *key, const char *s, size_t len, anvil_error *err);
int hv_set_array(anvil__hf_vocab *v, const char *key, uint32_t elem, const void *items, uint64_t count,
                 anvil_error *err);
/* The value of key, or NULL. */
const hv_kv *hv_get(const anvil__hf_vocab *v, const char *key);

/* What a load reads, shared by the paths. */
typedef struct hv_load {
    anvil__hf_vocab *v;
    const char *dir;
    int is_llama;             /* 1 Llama/Mistral, 0 Qwen2/Qwen3, 2 Phi3 */
    int is_gemma;             /* 2 or 3: Gemma2/Gemma3ForCausalLM, else 0 */
    int is_glm;               /* Glm4MoeForCausalLM: _set_vocab_glm */
    anvil_json_value *config; /* config.json */
    char *config_path;
    anvil_json_value *tok; /* tokenizer.json or NULL */
    char *tok_path;
    anvil_json_value *tcfg; /* tokenizer_config.json or NULL */
    char *tcfg_path;
    int has_vocab_size; /* hparams "vocab_size" (text_config first) */
    int64_t vocab_size;
} hv_load;

/* hparams[key] as the converter sees it ({**config, **text_config}); NULL
 * when absent. */
const anvil_json_value *hv_hparam(const hv_load *l, const char *key);

/* 1 when path exists (as anything: hv_read_file and the JSON reader refuse a
 * FIFO or a folder by name, where Path.is_file would skip it). */
int hv_is_file(const char *path);
/* Read a whole file (free() *out). */
int hv_read_file(const char *path, char **out, size_t *len, anvil_error *err);

/* j is a JSON string equal to s. */
int hv_str_is(const anvil_json_value *j, const char *s);
/* s[0..len) quoted and made terminal-safe for a message (in buf). */
const char *hv_quote(char *buf, size_t cap, const char *s, size_t len);
/* does_token_look_special(). */
int hv_looks_special(const char *s, size_t len);
/* Replace every U+2581 by a space in place (returns the new length). */
size_t hv_unmark_spaces(char *s, size_t len);

/* tokenizer.model (_create_vocab_sentencepiece). */
int hv_spm_vocab(hv_load *l, anvil_error *err);
/* dir/tokenizer.model's pieces in id order (text points into *buf; free()
 * both, also on error). */
typedef struct hv_spm_piece {
    const char *text;
    size_t len;
    float score;
    int type; /* the piece's type, NORMAL when unset */
} hv_spm_piece;
int hv_spm_read(const char *dir, char **buf, hv_spm_piece **pieces, size_t *n, anvil_error *err);
/* Phi3MiniModel.set_vocab (hf_vocab_phi3.c). */
int hv_phi3_vocab(hv_load *l, anvil_error *err);
/* Is tokenizer.json a llama-2 style BPE (LlamaHfVocab's test)? *yes. */
int hv_bpe_is_llama_hf(hv_load *l, int *yes, anvil_error *err);
/* LlamaHfVocab.all_tokens(). */
int hv_llama_hf_vocab(hv_load *l, anvil_error *err);
/* get_vocab_base() + the pre-tokenizer name (_set_vocab_gpt2's vocab). */
int hv_gpt2_vocab(hv_load *l, anvil_error *err);

/* SpecialVocab(dir, load_merges, special_token_types, n_vocab).add_to_gguf,
 * with extra (typ, id) _set_special_token calls after loading (CodeLlama). */
typedef struct hv_special_opts {
    int load_merges;
    const char *const *types; /* NULL: bos eos unk sep pad cls mask */
    size_t n_types;
    int has_n_vocab;
    uint64_t n_vocab;
    const char *const *extra_types;
    const int64_t *extra_ids;
    size_t n_extra;
} hv_special_opts;
int hv_special_vocab(hv_load *l, const hv_special_opts *o, anvil_error *err);

/* v->tokens, v->types and (with_scores) v->scores for n tokens, zeroed;
 * v->n_tokens = n. */
int hv_alloc_tokens(anvil__hf_vocab *v, uint64_t n, int with_scores, anvil_error *err);
/* Token i: a copy of s[0..len) in v's arena (unmark: with U+2581 read
 * back as spaces, hv_unmark_spaces), its type, and its score where v keeps
 * scores. */
int hv_put_token(anvil__hf_vocab *v, uint64_t i, const char *s, size_t len, float score, int type, int unmark,
                 anvil_error *err);

/* The tail LlamaModel's SentencePiece and LlamaHfVocab paths share, once
 * l->v holds the tokens: kind (v->kind: "spm", "llama-hf"), pre "default",
 * tokenizer.ggml.model/pre/tokens/scores/token_type, then the special
 * vocab with n_vocab = the token count. */
int hv_llama_finish(hv_load *l, const char *kind, anvil_error *err);

#endif
