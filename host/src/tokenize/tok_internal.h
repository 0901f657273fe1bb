/* SPDX-License-Identifier: MIT */
/*
 * Internal: the tokenizer's tables (tok_vocab.c builds them from a GGUF) and
 * what the encoders share. Token texts live in one pool; a token text maps
 * to its id through an open-addressing table (the last id of a duplicated
 * text wins, as llama.cpp's token_to_id map); BPE merges map a (left, right)
 * pair of texts to its rank the same way.
 */
#ifndef ANVIL_HOST_TOK_INTERNAL_H
#define ANVIL_HOST_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/tokenize.h"

/* llama.cpp's token attributes (llama_token_attr). */
enum {
    TOK_ATTR_UNKNOWN = 1u << 0,
    TOK_ATTR_UNUSED = 1u << 1,
    TOK_ATTR_NORMAL = 1u << 2,
    TOK_ATTR_CONTROL = 1u << 3,
    TOK_ATTR_USER_DEFINED = 1u << 4,
    TOK_ATTR_BYTE = 1u << 5,
    TOK_ATTR_LSTRIP = 1u << 7,
    TOK_ATTR_RSTRIP = 1u << 8
};

typedef enum tok_pre { TOK_PRE_NONE = 0, TOK_PRE_LLAMA3 = 1, TOK_PRE_QWEN2 = 2 } tok_pre;

typedef struct tok_str {
    uint32_t off, len; /* in the pool */
} tok_str;

struct anvil_tokenizer {
    anvil_vocab_kind kind;
    tok_pre pre;
    char model[32];
    char pre_name[64];
    uint32_t n_tokens;
    char *pool;
    size_t pool_len;
    tok_str *text;
    float *score;
    uint32_t *attr;
    uint32_t *map; /* id + 1 per slot, 0 empty */
    uint32_t map_mask;
    tok_str *mleft, *mright; /* merge rank -> its texts */
    uint32_t n_merges;
    uint32_t *mmap; /* rank + 1 per slot */
    uint32_t mmap_mask;
    int32_t bos, eos;
    int add_bos, add_eos, add_space_prefix, ignore_merges;
    int32_t *special; /* llama.cpp's cache_special_tokens order */
    uint32_t n_special;
    int32_t byte_tok[256];  /* SPM: <0xXX> (or the byte); BPE: the byte's one-byte text; -1 none */
    char byte_utf8[256][3]; /* BPE: GPT-2's printable code point of a byte, UTF-8, NUL-padded */
};

/* A growable id list. */
typedef struct tok_out {
    int32_t *ids;
    size_t n, cap;
} tok_out;

/* tok_vocab.c: tokens, scores, types, the text map and (BPE) the merges. */
int tok_vocab_read(anvil_tokenizer *t, const anvil_gguf *g, anvil_error *err);
uint64_t tok_hash(const char *s, size_t len);
/* Id of a text, or -1. */
int32_t tok_find(const anvil_tokenizer *t, const char *s, size_t len);
/* Rank of the merge (a, b), or -1. */
int32_t tok_merge_rank(const anvil_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen);
int tok_push(tok_out *o, int32_t id, anvil_error *err);

/* tok_heap.c: the queue of candidate merges both merge loops use. The
 * lowest key comes first, the leftmost (smallest left) among equal keys:
 * BPE keys a pair by its merge rank, SentencePiece by minus its token's
 * score. ln, rn: the sizes of left and right when queued (a pair whose
 * sides have changed since is stale). */
typedef struct tok_bigram {
    double key; /* a rank or a score: both exact in a double */
    int32_t left, right;
    uint32_t ln, rn;
} tok_bigram;
typedef struct tok_heap {
    tok_bigram *v;
    size_t n, cap;
} tok_heap;
int tok_heap_push(tok_heap *h, tok_bigram b, anvil_error *err);
/* The first pair; h->n must be > 0. */
tok_bigram tok_heap_pop(tok_heap *h);

/* SentencePiece: one raw fragment (already prefixed and escaped). */
int tok_spm_encode(const anvil_tokenizer *t, const char *text, size_t len, tok_out *o, anvil_error *err);
/* BPE: one raw fragment, pre-tokenized then merged. */
int tok_bpe_encode(const anvil_tokenizer *t, const char *text, size_t len, tok_out *o, anvil_error *err);

/* The code points of text as llama.cpp decodes them (an invalid sequence
 * gives U+FFFD and advances one byte). *out must be freed. */
int tok_utf8_decode(const char *text, size_t len, uint32_t **out, size_t *n, anvil_error *err);
/* Class bits of a code point (llama.cpp's unicode flags: letter, number, whitespace). */
enum { TOK_UNI_LETTER = 1, TOK_UNI_NUMBER = 2, TOK_UNI_SPACE = 4 };
unsigned tok_uni_class_of(uint32_t cp);
uint32_t tok_uni_lower(uint32_t cp);
/* Split cps[0..n) into words: lens[] (code points each), *n_words. cls (n
 * bytes) is scratch; lens has room for n. */
void tok_pretokenize(tok_pre pre, const uint32_t *cps, size_t n, unsigned char *cls, uint32_t *lens, size_t *n_words);

#endif
