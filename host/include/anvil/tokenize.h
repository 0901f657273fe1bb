/* SPDX-License-Identifier: MIT */
/*
 * anvil — text to token ids, as llama.cpp's llama_tokenize gives them.
 *
 * A tokenizer is read from a GGUF's tokenizer.ggml.* keys: SentencePiece
 * vocabularies (tokenizer.ggml.model "llama") and byte-level BPE ("gpt2")
 * with the llama3 ("llama-bpe", "llama3", ...) or qwen2 ("qwen2",
 * "deepseek-r1-qwen", ...) pre-tokenizer. The ids are llama.cpp's for the
 * same text and flags: special/added tokens split out first (control tokens
 * only with ANVIL_TOKENIZE_PARSE_SPECIAL), the pre-tokenizer's words merged
 * by rank (BPE) or by score (SPM) with byte fallback, BOS/EOS as the GGUF's
 * add_bos_token/add_eos_token keys say (ANVIL_TOKENIZE_ADD_SPECIAL). Any
 * other vocabulary type or pre-tokenizer is refused with a message naming
 * what is supported.
 *
 * Any bytes are accepted (invalid UTF-8 as llama.cpp reads it) except, in a
 * BPE vocabulary, a 4-byte sequence encoding a code point above U+10FFFF,
 * which llama.cpp cannot tokenize either (it throws): ANVIL_E_FORMAT.
 *
 * A tokenizer is immutable once open: anvil_tokenize may run on any number
 * of threads at once.
 */
#ifndef ANVIL_TOKENIZE_H
#define ANVIL_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct anvil_tokenizer anvil_tokenizer;

/* anvil_tokenize flags: llama_tokenize's add_special and parse_special. */
#define ANVIL_TOKENIZE_ADD_SPECIAL 1u   /* BOS/EOS where the vocabulary adds them */
#define ANVIL_TOKENIZE_PARSE_SPECIAL 2u /* control tokens' text becomes the token */

typedef enum anvil_vocab_kind {
    ANVIL_VOCAB_SPM = 1, /* SentencePiece ("llama") */
    ANVIL_VOCAB_BPE = 2  /* byte-level BPE ("gpt2") */
} anvil_vocab_kind;

/* What a tokenizer is. size: set it to sizeof(anvil_tokenizer_info) before
 * the call; fields past a smaller size are not written. */
typedef struct anvil_tokenizer_info {
    size_t size;
    anvil_vocab_kind kind;
    const char *model; /* tokenizer.ggml.model */
    const char *pre;   /* tokenizer.ggml.pre ("" for SPM) */
    uint32_t n_tokens;
    int32_t bos, eos; /* -1 when none */
    int add_bos, add_eos;
} anvil_tokenizer_info;

/* Read the tokenizer of the GGUF at path (vocab-only files too). */
ANVIL_API int anvil_tokenizer_open(anvil_tokenizer **out, const char *path, anvil_error *err);
/* Read it from an open file; nothing of g is kept (g may be closed after). */
ANVIL_API int anvil_tokenizer_from_gguf(anvil_tokenizer **out, const anvil_gguf *g, anvil_error *err);
ANVIL_API void anvil_tokenizer_free(anvil_tokenizer *t);
ANVIL_API int anvil_tokenizer_info_get(const anvil_tokenizer *t, anvil_tokenizer_info *info);
/* Token id's text as stored (not NUL-terminated; *len its bytes); NULL when out of range. */
ANVIL_API const char *anvil_tokenizer_token_text(const anvil_tokenizer *t, int32_t id, size_t *len);

/* Tokenize len bytes of text. Writes up to cap ids and sets *n_ids to the
 * count the text has; ANVIL_E_BUFFER_TOO_SMALL when cap < *n_ids (ids may be
 * NULL with cap 0 to ask the count). */
ANVIL_API int anvil_tokenize(const anvil_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t *ids,
                             size_t cap, size_t *n_ids, anvil_error *err);

#ifdef __cplusplus
}
#endif

#endif
