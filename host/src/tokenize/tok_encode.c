/* SPDX-License-Identifier: MIT */
/*
 * anvil_tokenize: llama.cpp's llama_vocab::impl::tokenize. Special tokens
 * are split out of the text first, longest first, each over what earlier
 * ones left (control and unknown tokens only when parsing special text;
 * user-defined ones always), honouring lstrip/rstrip; the raw pieces go to
 * the vocabulary's encoder (SPM: a space first where the previous piece was
 * special or it is the first, spaces as U+2581), with BOS/EOS around them
 * when asked and the vocabulary adds them.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tok_internal.h"

typedef struct frag {
    int32_t id; /* -1: raw text */
    size_t off, len;
} frag;

typedef struct frags {
    frag *v;
    size_t n, cap;
} frags;

static int frag_add(frags *f, int32_t id, size_t off, size_t len) {
    if (f->n == f->cap) {
        const size_t c = f->cap ? 2 * f->cap : 16;
        frag *p = realloc(f->v, c * sizeof *p);
        if (p == NULL) return -1;
        f->v = p;
        f->cap = c;
    }
    f->v[f->n++] = (frag){ id, off, len };
    return 0;
}

static const char *find_bytes(const char *h, size_t hl, const char *n, size_t nl) {
    if (nl > hl) return NULL;
    return memmem(h, hl, n, nl);
}

/* Split every raw fragment of *in by special token id into *out. */
static int split_by(const anvil_tokenizer *t, const char *text, int32_t id, frags *in, frags *out) {
    const char *st = t->pool + t->text[id].off;
    const size_t sl = t->text[id].len;
    const uint32_t attr = t->attr[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; ++i) {
        const frag f = in->v[i];
        if (f.id >= 0) {
            if (frag_add(out, f.id, 0, 0) != 0) return -1;
            continue;
        }
        size_t off = f.off, len = f.len;
        for (;;) {
            const char *m = find_bytes(text + off, len, st, sl);
            if (m == NULL) {
                if (len > 0 && frag_add(out, -1, off, len) != 0) return -1;
                break;
            }
            const size_t at = (size_t)(m - text);
            size_t left = at - off;
            if (attr & TOK_ATTR_LSTRIP)
                while (left > 0 && isspace((unsigned char)text[off + left - 1])) --left;
            if (left > 0 && frag_add(out, -1, off, left) != 0) return -1;
            if (frag_add(out, id, 0, 0) != 0) return -1;
            size_t roff = at + sl, rlen = off + len - roff;
            if (attr & TOK_ATTR_RSTRIP)
                while (rlen > 0 && isspace((unsigned char)text[roff])) ++roff, --rlen;
            off = roff;
            len = rlen;
            if (len == 0) break;
        }
    }
    return 0;
}

static int partition(const anvil_tokenizer *t, const char *text, size_t len, int parse_special, frags *res,
                     anvil_error *err) {
    frags a = { 0 }, b = { 0 };
    if (frag_add(&a, -1, 0, len) != 0) return anvil__nomem(err);
    for (uint32_t s = 0; s < t->n_special; ++s) {
        const int32_t id = t->special[s];
        if (!parse_special && (t->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) continue;
        int any = 0;
        for (size_t i = 0; i < a.n && !any; ++i)
            any = a.v[i].id < 0 &&
                  find_bytes(text + a.v[i].off, a.v[i].len, t->pool + t->text[id].off, t->text[id].len) != NULL;
        if (!any) continue;
        if (split_by(t, text, id, &a, &b) != 0) {
            free(a.v);
            free(b.v);
            return anvil__nomem(err);
        }
        const frags tmp = a;
        a = b;
        b = tmp;
    }
    free(b.v);
    *res = a;
    return ANVIL_OK;
}

/* SPM: " " first where asked, then every space as U+2581. */
static int spm_piece(const anvil_tokenizer *t, const char *s, size_t n, int prefix, tok_out *o, anvil_error *err) {
    size_t spaces = prefix ? 1 : 0;
    for (size_t i = 0; i < n; ++i) spaces += s[i] == ' ';
    char *buf = malloc(n + 2 * spaces + 3);
    if (buf == NULL) return anvil__nomem(err);
    size_t k = 0;
    if (prefix) memcpy(buf, "\xe2\x96\x81", 3), k = 3;
    for (size_t i = 0; i < n; ++i) {
        if (s[i] == ' ') memcpy(buf + k, "\xe2\x96\x81", 3), k += 3;
        else buf[k++] = s[i];
    }
    const int rc = tok_spm_encode(t, buf, k, o, err);
    free(buf);
    return rc;
}

static int encode_all(const anvil_tokenizer *t, const char *text, const frags *fr, unsigned flags, tok_out *o,
                      anvil_error *err) {
    const int add = (flags & ANVIL_TOKENIZE_ADD_SPECIAL) != 0;
    if (add && ((t->add_bos && t->bos < 0) || (t->add_eos && t->eos < 0)))
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "the vocabulary adds a %s token but has none (llama.cpp aborts here too); "
                                "tokenize without BOS/EOS (--no-bos)",
                                t->add_bos && t->bos < 0 ? "BOS" : "EOS");
    int rc = ANVIL_OK;
    if (add && t->add_bos) rc = tok_push(o, t->bos, err);
    int prev_special = 1;
    for (size_t i = 0; i < fr->n && rc == ANVIL_OK; ++i) {
        const frag *f = &fr->v[i];
        if (f->id >= 0) {
            rc = tok_push(o, f->id, err);
            prev_special = 1;
        } else if (t->kind == ANVIL_VOCAB_SPM) {
            rc = spm_piece(t, text + f->off, f->len, t->add_space_prefix && prev_special, o, err);
            prev_special = 0;
        } else {
            rc = tok_bpe_encode(t, text + f->off, f->len, o, err);
        }
    }
    if (rc == ANVIL_OK && add && t->add_eos) rc = tok_push(o, t->eos, err);
    return rc;
}

int anvil_tokenize(const anvil_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t *ids, size_t cap,
                   size_t *n_ids, anvil_error *err) {
    if (n_ids) *n_ids = 0;
    if (t == NULL || n_ids == NULL || (text == NULL && len > 0) || (ids == NULL && cap > 0))
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_tokenize: a NULL tokenizer, text, ids or n_ids");
    if (flags & ~(ANVIL_TOKENIZE_ADD_SPECIAL | ANVIL_TOKENIZE_PARSE_SPECIAL))
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_tokenize: unknown flags 0x%x", flags);
    frags fr = { 0 };
    tok_out o = { 0 };
    int rc = ANVIL_OK;
    if (len > 0) rc = partition(t, text, len, (flags & ANVIL_TOKENIZE_PARSE_SPECIAL) != 0, &fr, err);
    if (rc == ANVIL_OK) rc = encode_all(t, text, &fr, flags, &o, err);
    if (rc == ANVIL_OK) {
        *n_ids = o.n;
        if (o.n > cap)
            rc = anvil__error_set(err, ANVIL_E_BUFFER_TOO_SMALL, "anvil_tokenize: %zu ids, room for %zu", o.n, cap);
        else if (o.n) memcpy(ids, o.ids, o.n * sizeof *ids);
    }
    free(o.ids);
    free(fr.v);
    return rc;
}
