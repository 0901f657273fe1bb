/* SPDX-License-Identifier: MIT */
/*
 * Code points for the BPE pre-tokenizers, as llama.cpp's unicode.cpp reads
 * them: UTF-8 decoding (a malformed sequence is U+FFFD and one byte; 4-byte
 * leads decode up to U+1FFFFF unchecked), the letter/number/whitespace
 * classes of its tables (tok_unicode_table.h, generated), and the
 * llama3/qwen2 split rules
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (qwen2: \p{N} one digit at a time) as its hand-written matchers apply them.
 */
#include <stdlib.h>

#include "error.h"
#include "tok_internal.h"
#include "tok_unicode_table.h"

int tok_utf8_decode(const char *text, size_t len, uint32_t **out, size_t *n, anvil_error *err) {
    uint32_t *cps = malloc((len ? len : 1) * sizeof *cps);
    if (cps == NULL) return anvil__nomem(err);
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, k = 0;
    while (i < len) {
        const unsigned b = s[i];
        size_t need = 0;
        uint32_t cp = 0;
        if (b < 0x80) {
            cps[k++] = b;
            ++i;
            continue;
        }
        if ((b & 0x40) == 0) need = 0;
        else if ((b & 0x20) == 0) need = 1, cp = b & 0x1F;
        else if ((b & 0x10) == 0) need = 2, cp = b & 0x0F;
        else if ((b & 0x08) == 0) need = 3, cp = b & 0x07;
        int ok = need > 0 && i + need < len;
        for (size_t j = 1; ok && j <= need; ++j) {
            if ((s[i + j] & 0xC0) != 0x80) ok = 0;
            else cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (ok) {
            cps[k++] = cp;
            i += need + 1;
        } else {
            cps[k++] = 0xFFFD;
            ++i;
        }
    }
    *out = cps;
    *n = k;
    return ANVIL_OK;
}

unsigned tok_uni_class_of(uint32_t cp) {
    if (cp >= 0x110000) return 0;
    size_t lo = 0, hi = TOK_UNI_RANGES;
    while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        if (tok_uni_start[mid] <= cp) lo = mid;
        else hi = mid;
    }
    return tok_uni_class[lo];
}

uint32_t tok_uni_lower(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    for (size_t i = 0; i < TOK_UNI_LOWER_ASCII; ++i)
        if (tok_uni_lower_from[i] == cp) return tok_uni_lower_to[i];
    return cp;
}

/* The splitter's view of position p: its class bits plus IN when inside. */
enum { IN = 8, OUT_CP = 0xFFFFFFFFu };
typedef struct split {
    const uint32_t *cps;
    size_t n;
    unsigned char *cls; /* per code point, precomputed */
} split;

static unsigned fl(const split *s, size_t p) { return p < s->n ? s->cls[p] : 0; }
static uint32_t cpt(const split *s, size_t p) { return p < s->n ? s->cps[p] : OUT_CP; }

/* The length of the word starting at pos. */
static size_t word_at(const split *s, size_t pos, size_t max_digits) {
    const uint32_t c = s->cps[pos];
    const unsigned f = fl(s, pos);
    if (c == '\'' && pos + 1 < s->n) {
        const uint32_t c1 = tok_uni_lower(s->cps[pos + 1]);
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
        if (pos + 2 < s->n) {
            const uint32_t c2 = tok_uni_lower(s->cps[pos + 2]);
            if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
        }
    }
    if (!(c == '\r' || c == '\n' || (f & TOK_UNI_NUMBER))) {
        if ((f & TOK_UNI_LETTER) || (fl(s, pos + 1) & TOK_UNI_LETTER)) {
            size_t p = pos + 1;
            while (fl(s, p) & TOK_UNI_LETTER) ++p;
            return p - pos;
        }
    }
    if (f & TOK_UNI_NUMBER) {
        size_t p = pos;
        while ((fl(s, p) & TOK_UNI_NUMBER) && p - pos < max_digits) ++p;
        return p - pos;
    }
    unsigned f2 = c == ' ' ? fl(s, pos + 1) : f;
    const unsigned wln = TOK_UNI_SPACE | TOK_UNI_LETTER | TOK_UNI_NUMBER;
    if (!(f2 & wln) && f) {
        size_t p = pos + (c == ' ');
        while (!(f2 & wln) && f2) f2 = fl(s, ++p);
        while (cpt(s, p) == '\r' || cpt(s, p) == '\n') ++p;
        return p - pos;
    }
    size_t k = 0, last_rn = 0;
    while (fl(s, pos + k) & TOK_UNI_SPACE) {
        const uint32_t c2 = cpt(s, pos + k);
        if (c2 == '\r' || c2 == '\n') last_rn = pos + k + 1;
        ++k;
    }
    if (last_rn > 0) return last_rn - pos;
    if (k > 1 && cpt(s, pos + k) != OUT_CP) return k - 1;
    if (k > 0) return k;
    return 1;
}

void tok_pretokenize(tok_pre pre, const uint32_t *cps, size_t n, unsigned char *cls, uint32_t *lens,
                     size_t *n_words) {
    split s = { cps, n, cls };
    size_t w = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t c = cps[i];
        unsigned k;
        if (c < 128) {
            k = c >= 'a' && c <= 'z' ? 1 : c >= 'A' && c <= 'Z' ? 1 : c >= '0' && c <= '9' ? 2 : 0;
            if (c == ' ' || (c >= 9 && c <= 13)) k = TOK_UNI_SPACE;
        } else {
            k = tok_uni_class_of(c);
        }
        cls[i] = (unsigned char)(k | IN);
    }
    const size_t max_digits = pre == TOK_PRE_LLAMA3 ? 3 : 1;
    for (size_t pos = 0; pos < n;) {
        const size_t l = word_at(&s, pos, max_digits);
        lens[w++] = (uint32_t)l;
        pos += l;
    }
    *n_words = w;
}
