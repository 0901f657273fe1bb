/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer's tables from a GGUF, as llama.cpp's llama_vocab::load
 * builds them: the token list (an empty text reads "[EMPTY_<i>]"), scores,
 * attributes from tokenizer.ggml.token_type, merges ("a b" split at the
 * first space after the first byte), BOS/EOS ids and add_* flags (type
 * defaults, then the keys), the attribute fixes llama.cpp applies by text
 * (end-of-generation and FIM tokens become control tokens, ...), and the
 * special tokens in the order they are split out of text (longest first).
 * Unsupported vocabularies and pre-tokenizers are refused with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"
#include "tok_internal.h"

uint64_t tok_hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; ++i) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

int32_t tok_find(const anvil_tokenizer *t, const char *s, size_t len) {
    uint32_t i = (uint32_t)tok_hash(s, len) & t->map_mask;
    for (;;) {
        const uint32_t v = t->map[i];
        if (v == 0) return -1;
        const tok_str *ts = &t->text[v - 1];
        if (ts->len == len && memcmp(t->pool + ts->off, s, len) == 0) return (int32_t)(v - 1);
        i = (i + 1) & t->map_mask;
    }
}

static uint64_t pair_hash(const char *a, size_t alen, const char *b, size_t blen) {
    return tok_hash(a, alen) * 31u + tok_hash(b, blen) + alen;
}

int32_t tok_merge_rank(const anvil_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen) {
    if (t->mmap == NULL) return -1;
    uint32_t i = (uint32_t)pair_hash(a, alen, b, blen) & t->mmap_mask;
    for (;;) {
        const uint32_t v = t->mmap[i];
        if (v == 0) return -1;
        const tok_str *l = &t->mleft[v - 1], *r = &t->mright[v - 1];
        if (l->len == alen && r->len == blen && memcmp(t->pool + l->off, a, alen) == 0 &&
            memcmp(t->pool + r->off, b, blen) == 0)
            return (int32_t)(v - 1);
        i = (i + 1) & t->mmap_mask;
    }
}

int tok_push(tok_out *o, int32_t id, anvil_error *err) {
    if (o->n == o->cap && anvil__grow_array((void **)&o->ids, &o->cap, o->n + 1, sizeof *o->ids) != 0)
        return anvil__nomem(err);
    o->ids[o->n++] = id;
    return ANVIL_OK;
}

static uint32_t table_size(uint64_t n) {
    uint32_t s = 16;
    while (s < 2 * n) s <<= 1;
    return s;
}

/* Append bytes to the pool; *at gets their place. */
static int pool_add(anvil_tokenizer *t, size_t *cap, const char *s, size_t len, tok_str *at, anvil_error *err) {
    if (len > UINT32_MAX || t->pool_len + len > UINT32_MAX)
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "tokenizer texts exceed 4 GiB");
    if (t->pool_len + len > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < t->pool_len + len) c *= 2;
        char *p = realloc(t->pool, c);
        if (p == NULL) return anvil__nomem(err);
        t->pool = p;
        *cap = c;
    }
    if (len) memcpy(t->pool + t->pool_len, s, len);
    at->off = (uint32_t)t->pool_len;
    at->len = (uint32_t)len;
    t->pool_len += len;
    return ANVIL_OK;
}

static int read_tokens(anvil_tokenizer *t, const anvil_gguf *g, size_t *pool_cap, anvil_error *err) {
    anvil_gguf_array a;
    if (anvil_gguf_get_array(g, "tokenizer.ggml.tokens", &a, NULL) != ANVIL_OK ||
        a.elem_type != ANVIL_GGUF_TYPE_STRING)
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "tokenizer.ggml.tokens: missing or not an array of strings; the file has no "
                                "vocabulary to tokenize with");
    if (a.count == 0 || a.count >= INT32_MAX)
        return anvil__error_set(err, ANVIL_E_FORMAT, "tokenizer.ggml.tokens: %llu tokens (1 to 2^31-2 expected)",
                                (unsigned long long)a.count);
    const uint32_t n = (uint32_t)a.count;
    anvil_gguf_str *s = malloc((size_t)n * sizeof *s);
    t->text = calloc(n, sizeof *t->text);
    t->score = calloc(n, sizeof *t->score);
    t->attr = calloc(n, sizeof *t->attr);
    if (s == NULL || t->text == NULL || t->score == NULL || t->attr == NULL) {
        free(s);
        return anvil__nomem(err);
    }
    t->n_tokens = n;
    anvil_gguf_array_strings(&a, s, n);
    int rc = ANVIL_OK;
    for (uint32_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        char empty[32];
        const char *p = s[i].ptr;
        size_t len = s[i].len;
        if (len == 0) {
            len = (size_t)snprintf(empty, sizeof empty, "[EMPTY_%u]", i);
            p = empty;
        }
        rc = pool_add(t, pool_cap, p, len, &t->text[i], err);
        t->attr[i] = TOK_ATTR_NORMAL;
    }
    free(s);
    return rc;
}

static void read_scores_types(anvil_tokenizer *t, const anvil_gguf *g) {
    anvil_gguf_array a;
    if (anvil_gguf_get_array(g, "tokenizer.ggml.scores", &a, NULL) == ANVIL_OK && a.count >= t->n_tokens) {
        for (uint32_t i = 0; i < t->n_tokens; ++i) {
            if (a.elem_type == ANVIL_GGUF_TYPE_F32) {
                memcpy(&t->score[i], (const char *)a.data + 4 * (size_t)i, 4);
            } else if (a.elem_type == ANVIL_GGUF_TYPE_I32) {
                int32_t v;
                memcpy(&v, (const char *)a.data + 4 * (size_t)i, 4);
                t->score[i] = (float)v;
            }
        }
    }
    if (anvil_gguf_get_array(g, "tokenizer.ggml.token_type", &a, NULL) == ANVIL_OK &&
        a.elem_type == ANVIL_GGUF_TYPE_I32 && a.count >= t->n_tokens) {
        static const uint32_t by_type[7] = { 0,
                                             TOK_ATTR_NORMAL,
                                             TOK_ATTR_UNKNOWN,
                                             TOK_ATTR_CONTROL,
                                             TOK_ATTR_USER_DEFINED,
                                             TOK_ATTR_UNUSED,
                                             TOK_ATTR_BYTE };
        for (uint32_t i = 0; i < t->n_tokens; ++i) {
            int32_t v;
            memcpy(&v, (const char *)a.data + 4 * (size_t)i, 4);
            t->attr[i] = v >= 0 && v < 7 ? by_type[v] : 0;
        }
    }
}

static int build_map(anvil_tokenizer *t, anvil_error *err) {
    const uint32_t size = table_size(t->n_tokens);
    t->map = calloc(size, sizeof *t->map);
    if (t->map == NULL) return anvil__nomem(err);
    t->map_mask = size - 1;
    for (uint32_t id = 0; id < t->n_tokens; ++id) {
        const tok_str *ts = &t->text[id];
        uint32_t i = (uint32_t)tok_hash(t->pool + ts->off, ts->len) & t->map_mask;
        for (;;) {
            const uint32_t v = t->map[i];
            if (v == 0) break;
            const tok_str *o = &t->text[v - 1];
            if (o->len == ts->len && memcmp(t->pool + o->off, t->pool + ts->off, ts->len) == 0) break;
            i = (i + 1) & t->map_mask;
        }
        t->map[i] = id + 1; /* a later duplicate replaces the earlier id */
    }
    return ANVIL_OK;
}

static int read_merges(anvil_tokenizer *t, const anvil_gguf *g, size_t *pool_cap, anvil_error *err) {
    anvil_gguf_array a;
    if (anvil_gguf_get_array(g, "tokenizer.ggml.merges", &a, NULL) != ANVIL_OK ||
        a.elem_type != ANVIL_GGUF_TYPE_STRING)
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "tokenizer.ggml.merges: missing or not an array of strings (a BPE vocabulary "
                                "needs its merges; reconvert the model)");
    if (a.count >= INT32_MAX)
        return anvil__error_set(err, ANVIL_E_FORMAT, "tokenizer.ggml.merges: %llu merges is too many",
                                (unsigned long long)a.count);
    const uint32_t n = (uint32_t)a.count;
    anvil_gguf_str *s = malloc(((size_t)n + 1) * sizeof *s);
    t->mleft = calloc((size_t)n + 1, sizeof *t->mleft);
    t->mright = calloc((size_t)n + 1, sizeof *t->mright);
    const uint32_t size = table_size(n);
    t->mmap = calloc(size, sizeof *t->mmap);
    if (s == NULL || t->mleft == NULL || t->mright == NULL || t->mmap == NULL) {
        free(s);
        return anvil__nomem(err);
    }
    t->mmap_mask = size - 1;
    t->n_merges = n;
    anvil_gguf_array_strings(&a, s, n);
    int rc = ANVIL_OK;
    for (uint32_t r = 0; r < n && rc == ANVIL_OK; ++r) {
        /* The first space from byte 1; none: both halves empty (as llama.cpp). */
        const char *sp = s[r].len > 1 ? memchr(s[r].ptr + 1, ' ', s[r].len - 1) : NULL;
        size_t ll = 0, rl = 0;
        if (sp != NULL) {
            ll = (size_t)(sp - s[r].ptr);
            rl = s[r].len - ll - 1;
        }
        rc = pool_add(t, pool_cap, s[r].ptr, ll, &t->mleft[r], err);
        if (rc == ANVIL_OK) rc = pool_add(t, pool_cap, sp ? sp + 1 : "", rl, &t->mright[r], err);
    }
    free(s);
    for (uint32_t r = 0; r < n && rc == ANVIL_OK; ++r) {
        const char *lp = t->pool + t->mleft[r].off, *rp = t->pool + t->mright[r].off;
        const size_t ll = t->mleft[r].len, rl = t->mright[r].len;
        uint32_t i = (uint32_t)pair_hash(lp, ll, rp, rl) & t->mmap_mask;
        int dup = 0;
        while (t->mmap[i] != 0) {
            const uint32_t v = t->mmap[i] - 1;
            if (t->mleft[v].len == ll && t->mright[v].len == rl && memcmp(t->pool + t->mleft[v].off, lp, ll) == 0 &&
                memcmp(t->pool + t->mright[v].off, rp, rl) == 0) {
                dup = 1; /* std::map::emplace keeps the first rank */
                break;
            }
            i = (i + 1) & t->mmap_mask;
        }
        if (!dup) t->mmap[i] = r + 1;
    }
    return rc;
}

int tok_vocab_read(anvil_tokenizer *t, const anvil_gguf *g, anvil_error *err) {
    size_t pool_cap = 0;
    int rc = read_tokens(t, g, &pool_cap, err);
    if (rc != ANVIL_OK) return rc;
    read_scores_types(t, g);
    rc = build_map(t, err);
    if (rc != ANVIL_OK) return rc;
    anvil_gguf_str model;
    if (anvil_gguf_get_str(g, "tokenizer.ggml.model", &model, NULL) == ANVIL_OK && model.len == 4 &&
        memcmp(model.ptr, "gpt2", 4) == 0)
        rc = read_merges(t, g, &pool_cap, err);
    return rc;
}
