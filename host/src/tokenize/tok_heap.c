/* SPDX-License-Identifier: MIT */
/*
 * tok_heap: a binary min-heap of candidate merges (tok_internal.h), shared
 * by the BPE and SentencePiece merge loops. Ties in the key go to the
 * leftmost pair, as llama.cpp's comparators order them. Two queued pairs
 * share key and left only when one of them is stale (a side has grown
 * since it was queued), and a stale pair is skipped whenever it comes
 * out: the order between those two never reaches the output.
 */
#include <stdlib.h>

#include "error.h"
#include "tok_internal.h"

static int before(const tok_bigram *a, const tok_bigram *b) {
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

int tok_heap_push(tok_heap *h, tok_bigram b, anvil_error *err) {
    if (h->n == h->cap) {
        const size_t c = h->cap ? 2 * h->cap : 64;
        tok_bigram *v = realloc(h->v, c * sizeof *v);
        if (v == NULL) return anvil__nomem(err);
        h->v = v;
        h->cap = c;
    }
    size_t i = h->n++;
    while (i > 0) {
        const size_t p = (i - 1) / 2;
        if (!before(&b, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = b;
    return ANVIL_OK;
}

tok_bigram tok_heap_pop(tok_heap *h) {
    const tok_bigram top = h->v[0];
    const tok_bigram last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) ++c;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0) h->v[i] = last;
    return top;
}
