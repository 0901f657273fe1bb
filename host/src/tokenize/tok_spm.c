/* SPDX-License-Identifier: MIT */
/*
 * SentencePiece (BPE by score), as llama.cpp's llm_tokenizer_spm_session:
 * the text (spaces already written as U+2581) is cut into UTF-8 characters
 * (a lead byte's length, clipped at the end; stray bytes alone); adjacent
 * pairs whose concatenation is a token are queued by that token's score
 * (highest first, leftmost among equals) and merged while any remain; each
 * final piece is its token, or its bytes as <0xXX> tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tok_internal.h"

typedef struct sym {
    uint32_t n;
    int32_t prev, next;
    size_t off;
} sym;

typedef struct spm_work {
    sym *syms;
    tok_heap heap;
} spm_work;

static int try_bigram(const anvil_tokenizer *t, spm_work *w, const char *text, int32_t l, int32_t r,
                      anvil_error *err) {
    if (l < 0 || r < 0) return ANVIL_OK;
    const size_t size = (size_t)w->syms[l].n + w->syms[r].n;
    const int32_t id = tok_find(t, text + w->syms[l].off, size);
    if (id < 0) return ANVIL_OK;
    /* highest score first: the heap takes the lowest key */
    const tok_bigram b = { -(double)t->score[id], l, r, w->syms[l].n, w->syms[r].n };
    return tok_heap_push(&w->heap, b, err);
}

static int emit(const anvil_tokenizer *t, const char *s, size_t n, tok_out *o, anvil_error *err) {
    const int32_t id = tok_find(t, s, n);
    if (id >= 0) return tok_push(o, id, err);
    for (size_t j = 0; j < n; ++j) {
        const int32_t b = t->byte_tok[(unsigned char)s[j]];
        if (b < 0)
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "the vocabulary has no byte token <0x%02X> for a byte of the text "
                                    "(llama.cpp aborts here too)",
                                    (unsigned char)s[j]);
        const int rc = tok_push(o, b, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

int tok_spm_encode(const anvil_tokenizer *t, const char *text, size_t len, tok_out *o, anvil_error *err) {
    static const unsigned char lookup[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    if (len == 0) return ANVIL_OK;
    spm_work w = { 0 };
    w.syms = malloc(len * sizeof *w.syms);
    if (w.syms == NULL) return anvil__nomem(err);
    int32_t ns = 0;
    for (size_t off = 0; off < len;) {
        size_t n = lookup[(unsigned char)text[off] >> 4];
        if (n > len - off) n = len - off;
        w.syms[ns] = (sym){ (uint32_t)n, ns - 1, off + n == len ? -1 : ns + 1, off };
        off += n;
        ++ns;
    }
    int rc = ANVIL_OK;
    for (int32_t i = 1; i < ns && rc == ANVIL_OK; ++i) rc = try_bigram(t, &w, text, i - 1, i, err);
    while (rc == ANVIL_OK && w.heap.n > 0) {
        const tok_bigram b = tok_heap_pop(&w.heap);
        sym *l = &w.syms[b.left], *r = &w.syms[b.right];
        /* stale: a side has grown since (sizes only grow, so this is
         * llama.cpp's test that the pair's total size is unchanged) */
        if (l->n == 0 || r->n == 0 || l->n != b.ln || r->n != b.rn) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w.syms[r->next].prev = b.left;
        rc = try_bigram(t, &w, text, l->prev, b.left, err);
        if (rc == ANVIL_OK) rc = try_bigram(t, &w, text, b.left, l->next, err);
    }
    for (int32_t i = 0; i != -1 && rc == ANVIL_OK; i = w.syms[i].next)
        rc = emit(t, text + w.syms[i].off, w.syms[i].n, o, err);
    free(w.syms);
    free(w.heap.v);
    return rc;
}
