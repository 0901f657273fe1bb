/* SPDX-License-Identifier: MIT */
/*
 * A small strict JSON parser reporting events (see json.h for what "strict"
 * means and for the error precedence).
 *
 * Recursive descent, depth-limited. The only memory it keeps is the keys of
 * the objects currently open (to refuse duplicates: each object's keys are
 * sorted and compared when it closes, then dropped) and one scratch buffer
 * for the string value being reported.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ---- UTF-8 -------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence starting at s (1..4), 0 if invalid.
 * Follows Unicode's table of well-formed byte sequences, which excludes
 * overlong forms, surrogates and anything past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    const unsigned c = s[0];
    if (c < 0x80) {
        return 1;
    }
    unsigned lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) {
            lo = 0xA0;
        } else if (c == 0xED) {
            hi = 0x9F;
        }
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) {
            lo = 0x90;
        } else if (c == 0xF4) {
            hi = 0x8F;
        }
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF) {
            return 0;
        }
    }
    return len;
}

size_t anvil__utf8_valid_prefix(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        const size_t k = utf8_seq(s + i, n - i);
        if (k == 0) {
            return i;
        }
        i += k;
    }
    return n;
}

void anvil__json_quote_for_message(char *dst, size_t cap, const char *s, size_t len, size_t max_bytes) {
    if (cap == 0) {
        return;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    /* Reserve room for the closing quote, "..." and the NUL. */
    const size_t limit = cap > 6 ? cap - 6 : 0;
    if (o < limit) {
        dst[o++] = '"';
    }
    size_t i = 0;
    int cut = 0;
    while (i < len) {
        if (i >= max_bytes) {
            cut = 1;
            break;
        }
        size_t k = u[i] < 0x80 ? 1 : utf8_seq(u + i, len - i);
        const int printable = u[i] >= 0x20 && u[i] != 0x7F && k != 0;
        const size_t need = printable ? (u[i] == '"' || u[i] == '\\' ? 2 : k) : 4;
        if (o + need > limit) {
            cut = 1;
            break;
        }
        if (!printable) {
            static const char hex[] = "0123456789abcdef";
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[u[i] >> 4];
            dst[o++] = hex[u[i] & 15];
            i += 1;
            continue;
        }
        if (u[i] == '"' || u[i] == '\\') {
            dst[o++] = '\\';
        }
        memcpy(dst + o, u + i, k);
        o += k;
        i += k;
    }
    if (o < cap - 1) {
        dst[o++] = '"';
    }
    if (cut && o + 3 < cap) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o < cap ? o : cap - 1] = '\0';
}

/* ---- parser ------------------------------------------------------------- */

typedef struct key_rec {
    size_t at;     /* offset of the decoded key in keybuf */
    size_t len;    /* decoded length */
    size_t offset; /* where the key starts in the input */
} key_rec;

typedef struct path_frame {
    int is_array;
    size_t key;   /* object: index in keys of the member being parsed, or NO_KEY */
    size_t index; /* array: index of the item being parsed */
} path_frame;

#define NO_KEY ((size_t)-1)

typedef struct parser {
    const unsigned char *s;
    size_t n, pos;
    anvil_json_handler handler;
    void *user;
    char *keybuf; /* decoded keys of the open objects, back to back */
    size_t kb_len, kb_cap;
    key_rec *keys; /* one stack for all open objects (each one's are contiguous) */
    size_t nkeys, keys_cap;
    char *vbuf; /* decoded string value being reported */
    size_t vb_cap;
    path_frame path[ANVIL_JSON_MAX_DEPTH];
    int depth;
    anvil_json_error *err;
} parser;

static const char *key_text(const parser *p, size_t k) { return p->keybuf + p->keys[k].at; }

/* Record an error: a syntax (or memory) error replaces a pending duplicate
 * key; otherwise the first error stays. Message: "<what> at byte N (in
 * "a"."b"[3])". */
static anvil_json_status fail_at(parser *p, anvil_json_status st, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static anvil_json_status fail_at(parser *p, anvil_json_status st, size_t at, const char *fmt, ...) {
    anvil_json_error *e = p->err;
    if (e->status != ANVIL_JSON_OK && !(e->status == ANVIL_JSON_E_DUP_KEY && st != e->status)) {
        return st;
    }
    e->status = st;
    e->offset = at;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char where[200];
    size_t w = 0;
    where[0] = '\0';
    for (int d = 0; d < p->depth && w + 1 < sizeof where; d++) {
        const path_frame *f = &p->path[d];
        if (f->is_array) {
            w += (size_t)snprintf(where + w, sizeof where - w, "[%zu]", f->index);
        } else if (f->key != NO_KEY) {
            char q[80];
            anvil__json_quote_for_message(q, sizeof q, key_text(p, f->key), p->keys[f->key].len, 48);
            w += (size_t)snprintf(where + w, sizeof where - w, "%s%s", w ? "." : "", q);
        }
        if (w >= sizeof where) {
            w = sizeof where - 1;
        }
    }
    if (where[0] != '\0') {
        snprintf(e->message, sizeof e->message, "%s at byte %zu (in %s)", what, at, where);
    } else {
        snprintf(e->message, sizeof e->message, "%s at byte %zu", what, at);
    }
    return st;
}

static anvil_json_status nomem(parser *p) {
    return fail_at(p, ANVIL_JSON_E_NOMEM, p->pos, "out of memory while parsing JSON");
}

static anvil_json_status emit(parser *p, anvil_json_event_kind kind, size_t offset, const char *text, size_t len) {
    const anvil_json_event ev = { kind, p->depth, offset, text, len };
    if (p->handler != NULL && p->handler(p->user, &ev) != 0) {
        return ANVIL_JSON_E_STOPPED;
    }
    return ANVIL_JSON_OK;
}

static void skip_ws(parser *p) {
    while (p->pos < p->n) {
        const unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

/* Describe the byte at pos for "unexpected ..." messages. */
static const char *describe(parser *p, char *buf, size_t cap) {
    if (p->pos >= p->n) {
        return "end of input";
    }
    const unsigned char c = p->s[p->pos];
    if (c >= 0x21 && c < 0x7F) {
        snprintf(buf, cap, "character '%c'", c);
    } else {
        snprintf(buf, cap, "byte 0x%02x", c);
    }
    return buf;
}

/* Make room for `extra` more bytes in *buf (capacity *cap, used len). */
static int reserve(char **buf, size_t *cap, size_t len, size_t extra) {
    if (extra > SIZE_MAX - len) {
        return 0;
    }
    if (*cap - len >= extra) {
        return 1;
    }
    size_t ncap = *cap ? *cap : 256;
    while (ncap - len < extra) {
        if (ncap > SIZE_MAX / 2) {
            ncap = len + extra;
            break;
        }
        ncap *= 2;
    }
    char *nb = realloc(*buf, ncap);
    if (nb == NULL) {
        return 0;
    }
    *buf = nb;
    *cap = ncap;
    return 1;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Four hex digits at pos (after "\u"); -1 if malformed. */
static long read_hex4(parser *p) {
    if (p->n - p->pos < 4) {
        return -1;
    }
    long v = 0;
    for (int i = 0; i < 4; i++) {
        const int h = hexval(p->s[p->pos + (size_t)i]);
        if (h < 0) {
            return -1;
        }
        v = v * 16 + h;
    }
    p->pos += 4;
    return v;
}

static size_t put_utf8(char *o, unsigned long cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode the string whose text starts at p->pos (after the opening quote)
 * and closes at `end`, into o, which has room for the raw length + 1:
 * decoding never grows the text (every escape is at least as long as the
 * UTF-8 it stands for). */
static anvil_json_status decode_string(parser *p, size_t end, char *o, size_t *out_len) {
    size_t k = 0;
    while (p->pos < end) {
        const unsigned char c = p->s[p->pos];
        if (c < 0x20) {
            return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos,
                           "raw control character 0x%02x in a string (must be escaped)", c);
        }
        if (c >= 0x80) {
            const size_t len = utf8_seq(p->s + p->pos, end - p->pos);
            if (len == 0) {
                return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "invalid UTF-8 in a string");
            }
            memcpy(o + k, p->s + p->pos, len);
            k += len;
            p->pos += len;
            continue;
        }
        if (c != '\\') {
            o[k++] = (char)c;
            p->pos++;
            continue;
        }
        const size_t esc = p->pos;
        p->pos++;
        const unsigned char e = p->s[p->pos++];
        switch (e) {
        case '"': o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; break;
        case '/': o[k++] = '/'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            /* A quote is never a hex digit, so four digits cannot run past
             * the closing quote at `end`. */
            long cp = read_hex4(p);
            if (cp < 0) {
                return fail_at(p, ANVIL_JSON_E_SYNTAX, esc, "\\u escape needs four hex digits");
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return fail_at(p, ANVIL_JSON_E_SYNTAX, esc, "lone low surrogate \\u%04lX", cp);
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                    return fail_at(p, ANVIL_JSON_E_SYNTAX, esc,
                                   "lone high surrogate \\u%04lX (no low surrogate follows)", cp);
                }
                p->pos += 2;
                const long lo = read_hex4(p);
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    return fail_at(p, ANVIL_JSON_E_SYNTAX, esc,
                                   "high surrogate \\u%04lX not followed by a low surrogate", cp);
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) {
                return fail_at(p, ANVIL_JSON_E_SYNTAX, esc, "\\u0000 (NUL) in a string is not supported");
            }
            k += put_utf8(o + k, (unsigned long)cp);
            break;
        }
        default:
            return fail_at(p, ANVIL_JSON_E_SYNTAX, esc, "invalid escape '\\%c'", e >= 0x20 && e < 0x7F ? e : '?');
        }
    }
    o[k] = '\0';
    p->pos = end + 1;
    *out_len = k;
    return ANVIL_JSON_OK;
}

/* Where the string opening at p->pos closes (index of its closing quote). */
static anvil_json_status string_end(parser *p, size_t *end) {
    size_t i = p->pos + 1;
    while (i < p->n && p->s[i] != '"') {
        i += p->s[i] == '\\' ? 2 : 1;
    }
    if (i >= p->n) {
        return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "unterminated string");
    }
    *end = i;
    return ANVIL_JSON_OK;
}

static anvil_json_status parse_string_value(parser *p) {
    const size_t open = p->pos;
    size_t end = 0, len = 0;
    anvil_json_status st = string_end(p, &end);
    if (st != ANVIL_JSON_OK) {
        return st;
    }
    if (!reserve(&p->vbuf, &p->vb_cap, 0, end - open)) {
        return nomem(p);
    }
    p->pos = open + 1;
    if ((st = decode_string(p, end, p->vbuf, &len)) != ANVIL_JSON_OK) {
        return st;
    }
    return emit(p, ANVIL_JSON_STRING, open, p->vbuf, len);
}

/* A key goes onto the key stack (kept until its object closes). */
static anvil_json_status parse_key(parser *p, size_t *index) {
    const size_t open = p->pos;
    size_t end = 0, len = 0;
    anvil_json_status st = string_end(p, &end);
    if (st != ANVIL_JSON_OK) {
        return st;
    }
    if (!reserve(&p->keybuf, &p->kb_cap, p->kb_len, end - open)) {
        return nomem(p);
    }
    if (p->nkeys == p->keys_cap) {
        const size_t ncap = p->keys_cap ? p->keys_cap * 2 : 64;
        key_rec *nk = ncap <= SIZE_MAX / sizeof *nk ? realloc(p->keys, ncap * sizeof *nk) : NULL;
        if (nk == NULL) {
            return nomem(p);
        }
        p->keys = nk;
        p->keys_cap = ncap;
    }
    p->pos = open + 1;
    if ((st = decode_string(p, end, p->keybuf + p->kb_len, &len)) != ANVIL_JSON_OK) {
        return st;
    }
    key_rec *k = &p->keys[p->nkeys];
    k->at = p->kb_len;
    k->len = len;
    k->offset = open;
    p->kb_len += len + 1;
    *index = p->nkeys++;
    return emit(p, ANVIL_JSON_KEY, open, key_text(p, *index), len);
}

static anvil_json_status parse_number(parser *p) {
    const size_t start = p->pos;
    const unsigned char *s = p->s;
    size_t i = p->pos;
    if (i < p->n && s[i] == '-') {
        i++;
    }
    if (i >= p->n || s[i] < '0' || s[i] > '9') {
        return fail_at(p, ANVIL_JSON_E_SYNTAX, start, "malformed number");
    }
    if (s[i] == '0') {
        i++;
        if (i < p->n && s[i] >= '0' && s[i] <= '9') {
            return fail_at(p, ANVIL_JSON_E_SYNTAX, start, "number with a leading zero");
        }
    } else {
        while (i < p->n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
    }
    if (i < p->n && s[i] == '.') {
        i++;
        if (i >= p->n || s[i] < '0' || s[i] > '9') {
            return fail_at(p, ANVIL_JSON_E_SYNTAX, start, "number with no digit after '.'");
        }
        while (i < p->n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
    }
    if (i < p->n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->n && (s[i] == '+' || s[i] == '-')) {
            i++;
        }
        if (i >= p->n || s[i] < '0' || s[i] > '9') {
            return fail_at(p, ANVIL_JSON_E_SYNTAX, start, "number with an empty exponent");
        }
        while (i < p->n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
    }
    p->pos = i;
    return emit(p, ANVIL_JSON_NUMBER, start, (const char *)s + start, i - start);
}

/* A key as sorted for the duplicate check (self-contained: qsort has no
 * context argument, and parsers may run on several threads). */
typedef struct sort_key {
    const char *text;
    size_t len;
    size_t offset;
} sort_key;

/* By key bytes, then by position: equal neighbours are duplicates, and the
 * first pair of a run is (first, second occurrence). */
static int sort_key_cmp(const void *a, const void *b) {
    const sort_key *x = a, *y = b;
    const size_t n = x->len < y->len ? x->len : y->len;
    const int c = memcmp(x->text, y->text, n);
    if (c != 0) {
        return c;
    }
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return x->offset < y->offset ? -1 : (x->offset > y->offset);
}

static int same_key(const sort_key *a, const sort_key *b) {
    return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
}

/* Check keys [base, nkeys) of the closing object; a duplicate is recorded
 * (the one whose second occurrence comes first in the text) and parsing
 * goes on. */
static anvil_json_status check_duplicates(parser *p, size_t base) {
    const size_t count = p->nkeys - base;
    if (count < 2) {
        return ANVIL_JSON_OK;
    }
    sort_key *k = count <= SIZE_MAX / sizeof *k ? malloc(count * sizeof *k) : NULL;
    if (k == NULL) {
        return nomem(p);
    }
    for (size_t i = 0; i < count; i++) {
        k[i].text = key_text(p, base + i);
        k[i].len = p->keys[base + i].len;
        k[i].offset = p->keys[base + i].offset;
    }
    qsort(k, count, sizeof *k, sort_key_cmp);
    const sort_key *first = NULL, *second = NULL;
    for (size_t i = 1; i < count; i++) {
        if (same_key(&k[i], &k[i - 1]) && (i < 2 || !same_key(&k[i - 1], &k[i - 2]))) {
            if (second == NULL || k[i].offset < second->offset) {
                first = &k[i - 1];
                second = &k[i];
            }
        }
    }
    if (second != NULL && p->err->status == ANVIL_JSON_OK) {
        char q[160];
        anvil__json_quote_for_message(q, sizeof q, second->text, second->len, 120);
        fail_at(p, ANVIL_JSON_E_DUP_KEY, second->offset, "duplicate key %s (first at byte %zu)", q, first->offset);
    }
    free(k);
    return ANVIL_JSON_OK;
}

static anvil_json_status parse_value(parser *p);

static anvil_json_status parse_container(parser *p, int is_object) {
    const size_t open = p->pos;
    if (p->depth >= ANVIL_JSON_MAX_DEPTH) {
        return fail_at(p, ANVIL_JSON_E_SYNTAX, open, "nesting deeper than %d levels", ANVIL_JSON_MAX_DEPTH);
    }
    anvil_json_status st = emit(p, is_object ? ANVIL_JSON_OBJECT_BEGIN : ANVIL_JSON_ARRAY_BEGIN, open, NULL, 0);
    if (st != ANVIL_JSON_OK) {
        return st;
    }
    path_frame *f = &p->path[p->depth++];
    f->is_array = !is_object;
    f->key = NO_KEY;
    f->index = 0;
    const char close = is_object ? '}' : ']';
    const size_t key_base = p->nkeys, kb_base = p->kb_len;
    char b[32];

    p->pos++;
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_ws(p);
            if (is_object) {
                if (p->pos >= p->n || p->s[p->pos] != '"') {
                    return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "expected a string key, found %s",
                                   describe(p, b, sizeof b));
                }
                f->key = NO_KEY;
                size_t k = 0;
                if ((st = parse_key(p, &k)) != ANVIL_JSON_OK) {
                    return st;
                }
                f->key = k;
                skip_ws(p);
                if (p->pos >= p->n || p->s[p->pos] != ':') {
                    return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "expected ':' after a key, found %s",
                                   describe(p, b, sizeof b));
                }
                p->pos++;
            }
            if ((st = parse_value(p)) != ANVIL_JSON_OK) {
                return st;
            }
            f->index++;
            skip_ws(p);
            if (p->pos < p->n && p->s[p->pos] == ',') {
                p->pos++;
                skip_ws(p);
                if (p->pos < p->n && p->s[p->pos] == close) {
                    return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "trailing comma before '%c'", close);
                }
                continue;
            }
            if (p->pos < p->n && p->s[p->pos] == close) {
                p->pos++;
                break;
            }
            return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "expected ',' or '%c', found %s", close,
                           describe(p, b, sizeof b));
        }
    }
    if (is_object) {
        /* Report duplicates with this object's own path, not its last key. */
        f->key = NO_KEY;
        if ((st = check_duplicates(p, key_base)) != ANVIL_JSON_OK) {
            return st;
        }
        p->nkeys = key_base;
        p->kb_len = kb_base;
    }
    p->depth--;
    return emit(p, is_object ? ANVIL_JSON_OBJECT_END : ANVIL_JSON_ARRAY_END, p->pos - 1, NULL, 0);
}

static anvil_json_status parse_literal(parser *p, const char *word, anvil_json_event_kind kind) {
    const size_t len = strlen(word);
    const size_t at = p->pos;
    if (p->n - p->pos < len || memcmp(p->s + p->pos, word, len) != 0) {
        char b[32];
        return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "expected a value, found %s", describe(p, b, sizeof b));
    }
    p->pos += len;
    return emit(p, kind, at, NULL, 0);
}

static anvil_json_status parse_value(parser *p) {
    skip_ws(p);
    char b[32];
    if (p->pos >= p->n) {
        return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "expected a value, found end of input");
    }
    switch (p->s[p->pos]) {
    case '{': return parse_container(p, 1);
    case '[': return parse_container(p, 0);
    case '"': return parse_string_value(p);
    case 't': return parse_literal(p, "true", ANVIL_JSON_TRUE);
    case 'f': return parse_literal(p, "false", ANVIL_JSON_FALSE);
    case 'n': return parse_literal(p, "null", ANVIL_JSON_NULL);
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9': return parse_number(p);
    default: return fail_at(p, ANVIL_JSON_E_SYNTAX, p->pos, "expected a value, found %s", describe(p, b, sizeof b));
    }
}

anvil_json_status anvil__json_parse(const char *text, size_t len, anvil_json_handler handler, void *user,
                                    anvil_json_error *err) {
    anvil_json_error local;
    if (err == NULL) {
        err = &local;
    }
    memset(err, 0, sizeof *err);
    parser p;
    memset(&p, 0, sizeof p);
    p.s = (const unsigned char *)text;
    p.n = len;
    p.handler = handler;
    p.user = user;
    p.err = err;
    anvil_json_status st = parse_value(&p);
    if (st == ANVIL_JSON_OK) {
        skip_ws(&p);
        if (p.pos != p.n) {
            char b[32];
            st = fail_at(&p, ANVIL_JSON_E_SYNTAX, p.pos, "unexpected %s after the end of the JSON value",
                         describe(&p, b, sizeof b));
        }
    }
    free(p.keybuf);
    free(p.keys);
    free(p.vbuf);
    if (st == ANVIL_JSON_E_STOPPED) {
        err->status = st;
        snprintf(err->message, sizeof err->message, "stopped by the handler at byte %zu", p.pos);
        return st;
    }
    /* A duplicate key recorded on the way is the answer if nothing worse came. */
    return st != ANVIL_JSON_OK ? st : err->status;
}

int anvil__json_number_u64(const char *text, size_t len, uint64_t *out) {
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') {
            return 1; /* sign, fraction or exponent */
        }
    }
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        const unsigned d = (unsigned)(text[i] - '0');
        if (x > (UINT64_MAX - d) / 10) {
            return 2;
        }
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

const char *anvil__json_event_what(anvil_json_event_kind kind) {
    switch (kind) {
    case ANVIL_JSON_OBJECT_BEGIN: return "an object";
    case ANVIL_JSON_ARRAY_BEGIN: return "an array";
    case ANVIL_JSON_STRING: return "a string";
    case ANVIL_JSON_NUMBER: return "a number";
    case ANVIL_JSON_TRUE: return "true";
    case ANVIL_JSON_FALSE: return "false";
    case ANVIL_JSON_NULL: return "null";
    default: return "?";
    }
}
