/* SPDX-License-Identifier: MIT */
/*
 * Byte-level BPE, as llama.cpp's llm_tokenizer_bpe_session: the fragment is
 * split into words by the pre-tokenizer; each word's code points are
 * re-encoded in UTF-8 and every byte written as GPT-2's printable code point;
 * with ignore_merges (llama3) a word that is a token is taken whole;
 * otherwise its characters are merged pair by pair, the lowest merge rank
 * first (the leftmost among equal ranks), and each final piece is its token
 * or, failing that, the tokens of its single bytes (those that exist).
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tok_internal.h"

typedef struct sym {
    uint32_t off, n; /* in the word */
    int32_t prev, next;
} sym;

typedef struct bpe_work {
    char *word;
    size_t word_cap;
    sym *syms;
    size_t sym_cap;
    tok_heap heap;
} bpe_work;

static int add_bigram(const anvil_tokenizer *t, bpe_work *w, int32_t l, int32_t r, anvil_error *err) {
    if (l < 0 || r < 0) return ANVIL_OK;
    const sym *a = &w->syms[l], *b = &w->syms[r];
    const int32_t rank = tok_merge_rank(t, w->word + a->off, a->n, w->word + b->off, b->n);
    if (rank < 0) return ANVIL_OK;
    const tok_bigram bg = { (double)rank, l, r, a->n, b->n };
    return tok_heap_push(&w->heap, bg, err);
}

static int emit_piece(const anvil_tokenizer *t, const char *s, size_t n, tok_out *o, anvil_error *err) {
    const int32_t id = tok_find(t, s, n);
    if (id >= 0) return tok_push(o, id, err);
    for (size_t j = 0; j < n; ++j) {
        const int32_t b = t->byte_tok[(unsigned char)s[j]];
        if (b >= 0) {
            const int rc = tok_push(o, b, err);
            if (rc != ANVIL_OK) return rc;
        }
    }
    return ANVIL_OK;
}

static size_t lead_len(unsigned char c) {
    static const unsigned char lookup[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    return lookup[c >> 4];
}

/* Merge one byte-encoded word (w->word, len bytes) and emit its tokens. */
static int merge_word(const anvil_tokenizer *t, bpe_work *w, size_t len, tok_out *o, anvil_error *err) {
    if (t->ignore_merges && tok_find(t, w->word, len) >= 0) return emit_piece(t, w->word, len, o, err);
    if (len > w->sym_cap) {
        sym *s = realloc(w->syms, len * sizeof *s);
        if (s == NULL) return anvil__nomem(err);
        w->syms = s;
        w->sym_cap = len;
    }
    int32_t ns = 0;
    for (size_t off = 0; off < len;) {
        size_t n = lead_len((unsigned char)w->word[off]);
        if (n > len - off) n = len - off;
        w->syms[ns] = (sym){ (uint32_t)off, (uint32_t)n, ns - 1, off + n == len ? -1 : ns + 1 };
        off += n;
        ++ns;
    }
    w->heap.n = 0;
    int rc = ANVIL_OK;
    for (int32_t i = 1; i < ns && rc == ANVIL_OK; ++i) rc = add_bigram(t, w, i - 1, i, err);
    while (rc == ANVIL_OK && w->heap.n > 0) {
        const tok_bigram b = tok_heap_pop(&w->heap);
        sym *l = &w->syms[b.left], *r = &w->syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n != b.ln || r->n != b.rn) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w->syms[r->next].prev = b.left;
        rc = add_bigram(t, w, l->prev, b.left, err);
        if (rc == ANVIL_OK) rc = add_bigram(t, w, b.left, l->next, err);
    }
    for (int32_t i = 0; i < ns && rc == ANVIL_OK; ++i)
        if (w->syms[i].n > 0) rc = emit_piece(t, w->word + w->syms[i].off, w->syms[i].n, o, err);
    return rc;
}

/* Write code points cps[0..n) as a byte-encoded word into w->word. */
static int encode_word(const anvil_tokenizer *t, bpe_work *w, const uint32_t *cps, size_t n, size_t *len,
                       anvil_error *err) {
    if (8 * n > w->word_cap) {
        char *p = realloc(w->word, 8 * n);
        if (p == NULL) return anvil__nomem(err);
        w->word = p;
        w->word_cap = 8 * n;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t c = cps[i];
        unsigned char u[4];
        size_t m;
        if (c < 0x80) u[0] = (unsigned char)c, m = 1;
        else if (c < 0x800) u[0] = (unsigned char)(0xC0 | (c >> 6)), u[1] = (unsigned char)(0x80 | (c & 0x3F)), m = 2;
        else if (c < 0x10000)
            u[0] = (unsigned char)(0xE0 | (c >> 12)), u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)),
            u[2] = (unsigned char)(0x80 | (c & 0x3F)), m = 3;
        else if (c <= 0x10FFFF)
            u[0] = (unsigned char)(0xF0 | (c >> 18)), u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F)),
            u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)), u[3] = (unsigned char)(0x80 | (c & 0x3F)), m = 4;
        else
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "the text has a 4-byte UTF-8 sequence for U+%X, above U+10FFFF: not a "
                                    "code point (llama.cpp's tokenizer throws on it); fix the text",
                                    (unsigned)c);
        for (size_t j = 0; j < m; ++j) {
            const char *e = t->byte_utf8[u[j]];
            w->word[k++] = e[0];
            if (e[1]) w->word[k++] = e[1];
        }
    }
    *len = k;
    return ANVIL_OK;
}

int tok_bpe_encode(const anvil_tokenizer *t, const char *text, size_t len, tok_out *o, anvil_error *err) {
    uint32_t *cps = NULL, *lens = NULL;
    unsigned char *cls = NULL;
    size_t n = 0, n_words = 0;
    bpe_work w = { 0 };
    int rc = tok_utf8_decode(text, len, &cps, &n, err);
    if (rc != ANVIL_OK) goto out;
    lens = malloc((n ? n : 1) * sizeof *lens);
    cls = malloc(n ? n : 1);
    if (lens == NULL || cls == NULL) {
        rc = anvil__nomem(err);
        goto out;
    }
    tok_pretokenize(t->pre, cps, n, cls, lens, &n_words);
    size_t at = 0;
    for (size_t i = 0; i < n_words && rc == ANVIL_OK; ++i) {
        size_t wl = 0;
        rc = encode_word(t, &w, cps + at, lens[i], &wl, err);
        if (rc == ANVIL_OK) rc = merge_word(t, &w, wl, o, err);
        at += lens[i];
    }
out:
    free(w.word);
    free(w.syms);
    free(w.heap.v);
    free(cls);
    free(lens);
    free(cps);
    return rc;
}
