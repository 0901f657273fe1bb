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

typedef struct bigram {
    float score;
    int32_t left, right;
    size_t size;
} bigram;

static int before(const bigram *a, const bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

typedef struct spm_work {
    sym *syms;
    bigram *heap;
    size_t heap_n, heap_cap;
} spm_work;

static int heap_push(spm_work *w, bigram b, anvil_error *err) {
    if (w->heap_n == w->heap_cap) {
        const size_t c = w->heap_cap ? 2 * w->heap_cap : 64;
        bigram *h = realloc(w->heap, c * sizeof *h);
        if (h == NULL) return anvil__nomem(err);
        w->heap = h;
        w->heap_cap = c;
    }
    size_t i = w->heap_n++;
    while (i > 0) {
        const size_t p = (i - 1) / 2;
        if (!before(&b, &w->heap[p])) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = b;
    return ANVIL_OK;
}

static bigram heap_pop(spm_work *w) {
    const bigram top = w->heap[0];
    const bigram last = w->heap[--w->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->heap_n) break;
        if (c + 1 < w->heap_n && before(&w->heap[c + 1], &w->heap[c])) ++c;
        if (!before(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->heap_n > 0) w->heap[i] = last;
    return top;
}

static int try_bigram(const anvil_tokenizer *t, spm_work *w, const char *text, int32_t l, int32_t r,
                      anvil_error *err) {
    if (l < 0 || r < 0) return ANVIL_OK;
    const size_t size = (size_t)w->syms[l].n + w->syms[r].n;
    const int32_t id = tok_find(t, text + w->syms[l].off, size);
    if (id < 0) return ANVIL_OK;
    const bigram b = { t->score[id], l, r, size };
    return heap_push(w, b, err);
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
    while (rc == ANVIL_OK && w.heap_n > 0) {
        const bigram b = heap_pop(&w);
        sym *l = &w.syms[b.left], *r = &w.syms[b.right];
        if (l->n == 0 || r->n == 0 || (size_t)l->n + r->n != b.size) continue;
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
    free(w.heap);
    return rc;
}
