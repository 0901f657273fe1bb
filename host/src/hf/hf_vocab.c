/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab: the helpers the tokenizer paths share (hf_vocab_internal.h):
 * the arena, the KV list with gguf-py's dict semantics, the token table,
 * files, Python truthiness and the special-token tests. The module's entry
 * points (hf_vocab.h: which set_vocab path a folder takes, writing the KV
 * list) are in hf_vocab_load.c.
 */
#include "hf_vocab_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "file_input.h"

/* ---- arena ------------------------------------------------------------------ */

struct hv_block {
    hv_block *next;
    size_t used, cap;
    char data[];
};

char *hv_dup(hv_arena *a, const char *s, size_t n) {
    hv_block *b = a->head;
    if (n >= SIZE_MAX / 2) return NULL;
    if (b != NULL) b->used = (b->used + 7) & ~(size_t)7; /* aligned for arrays kept here */
    if (b == NULL || b->used > b->cap || b->cap - b->used < n + 1) {
        const size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        b = malloc(sizeof *b + cap);
        if (b == NULL) return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    char *p = b->data + b->used;
    if (n > 0) memcpy(p, s, n);
    p[n] = '\0';
    b->used += n + 1;
    return p;
}

char *hv_printf(hv_arena *a, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    if ((size_t)n < sizeof small) return hv_dup(a, small, (size_t)n);
    char *big = malloc((size_t)n + 1); /* a long key (a chat template's name): sized, never cut */
    if (big == NULL) return NULL;
    va_start(ap, fmt);
    (void)vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    char *out = hv_dup(a, big, (size_t)n);
    free(big);
    return out;
}

void hv_arena_free(hv_arena *a) {
    while (a->head != NULL) {
        hv_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ---- the KV list -------------------------------------------------------------- */

const hv_kv *hv_get(const anvil__hf_vocab *v, const char *key) {
    for (size_t i = 0; i < v->n_kvs; ++i) {
        if (strcmp(v->kvs[i].key, key) == 0) return &v->kvs[i];
    }
    return NULL;
}

static int hv_put(anvil__hf_vocab *v, const hv_kv *kv, anvil_error *err) {
    for (size_t i = 0; i < v->n_kvs; ++i) {
        if (strcmp(v->kvs[i].key, kv->key) == 0) {
            const char *key = v->kvs[i].key;
            v->kvs[i] = *kv;
            v->kvs[i].key = key;
            return ANVIL_OK;
        }
    }
    if (v->n_kvs == v->cap_kvs) {
        const size_t cap = v->cap_kvs ? v->cap_kvs * 2 : 32;
        hv_kv *nk = realloc(v->kvs, cap * sizeof *nk);
        if (nk == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
        v->kvs = nk;
        v->cap_kvs = cap;
    }
    hv_kv *slot = &v->kvs[v->n_kvs];
    *slot = *kv;
    slot->key = hv_dup(&v->arena, kv->key, strlen(kv->key));
    if (slot->key == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    v->n_kvs++;
    return ANVIL_OK;
}

int hv_set_u32(anvil__hf_vocab *v, const char *key, uint32_t u, anvil_error *err) {
    hv_kv kv = { .key = key, .type = ANVIL_GGUF_TYPE_U32, .u = u };
    return hv_put(v, &kv, err);
}

int hv_set_bool(anvil__hf_vocab *v, const char *key, int b, anvil_error *err) {
    hv_kv kv = { .key = key, .type = ANVIL_GGUF_TYPE_BOOL, .u = b ? 1u : 0u };
    return hv_put(v, &kv, err);
}

int hv_set_str(anvil__hf_vocab *v, const char *key, const char *s, size_t len, anvil_error *err) {
    if (len == 0) return ANVIL_OK; /* add_string skips an empty value */
    hv_kv kv = { .key = key, .type = ANVIL_GGUF_TYPE_STRING };
    kv.s.ptr = hv_dup(&v->arena, s, len);
    kv.s.len = len;
    if (kv.s.ptr == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    return hv_put(v, &kv, err);
}

int hv_set_array(anvil__hf_vocab *v, const char *key, uint32_t elem, const void *items, uint64_t count,
                 anvil_error *err) {
    if (count == 0) return ANVIL_OK; /* add_array skips an empty list */
    hv_kv kv = { .key = key, .type = ANVIL_GGUF_TYPE_ARRAY, .elem = elem, .count = count };
    if (elem == ANVIL_GGUF_TYPE_STRING) {
        kv.strs = items;
    } else {
        kv.nums = items;
    }
    return hv_put(v, &kv, err);
}

int hv_alloc_tokens(anvil__hf_vocab *v, uint64_t n, int with_scores, anvil_error *err) {
    v->tokens = calloc(n ? n : 1, sizeof *v->tokens);
    v->types = calloc(n ? n : 1, sizeof *v->types);
    v->scores = with_scores ? calloc(n ? n : 1, sizeof *v->scores) : NULL;
    if (v->tokens == NULL || v->types == NULL || (with_scores && v->scores == NULL)) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory for %llu tokens",
                                (unsigned long long)n);
    }
    v->n_tokens = n;
    return ANVIL_OK;
}

int hv_put_token(anvil__hf_vocab *v, uint64_t i, const char *s, size_t len, float score, int type, int unmark,
                 anvil_error *err) {
    char *t = hv_dup(&v->arena, s, len);
    if (t == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    if (unmark) len = hv_unmark_spaces(t, len);
    v->tokens[i].ptr = t;
    v->tokens[i].len = len;
    v->types[i] = type;
    if (v->scores != NULL) v->scores[i] = score;
    return ANVIL_OK;
}

/* ---- small helpers ------------------------------------------------------------ */

const anvil_json_value *hv_hparam(const hv_load *l, const char *key) {
    const anvil_json_value *tc = anvil__json_get(l->config, "text_config");
    const anvil_json_value *j = tc != NULL && tc->kind == ANVIL_JSON_OBJECT_BEGIN ? anvil__json_get(tc, key) : NULL;
    return j != NULL ? j : anvil__json_get(l->config, key);
}

int hv_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0; /* present as anything: hv_read_file refuses a non-regular one by name */
}

int hv_read_file(const char *path, char **out, size_t *len, anvil_error *err) {
    return file_input_read(path, (size_t)1 << 31, "a tokenizer file", out, len, err);
}

const char *hv_quote(char *buf, size_t cap, const char *s, size_t len) {
    anvil__json_quote_for_message(buf, cap, s, len, 48);
    return buf;
}

int hv_str_is(const anvil_json_value *j, const char *s) {
    return j != NULL && j->kind == ANVIL_JSON_STRING && strlen(s) == j->len && memcmp(j->text, s, j->len) == 0;
}

static int has_prefix(const char *s, size_t len, const char *p) {
    const size_t n = strlen(p);
    return len >= n && memcmp(s, p, n) == 0;
}

static int has_suffix(const char *s, size_t len, const char *p) {
    const size_t n = strlen(p);
    return len >= n && memcmp(s + len - n, p, n) == 0;
}

int hv_looks_special(const char *s, size_t len) {
    static const char *const exact[] = { "<pad>", "<mask>", "<2mass>", "[@BOS@]" };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; ++i) {
        if (len == strlen(exact[i]) && memcmp(s, exact[i], len) == 0) return 1;
    }
    if (has_prefix(s, len, "<|") && has_suffix(s, len, "|>")) return 1;
    /* "<\uff5c" ... "\uff5c>" (deepseek-coder's fullwidth bar) */
    if (has_prefix(s, len, "<\xef\xbd\x9c") && has_suffix(s, len, "\xef\xbd\x9c>")) return 1;
    return has_prefix(s, len, "<unused") && has_suffix(s, len, ">");
}

size_t hv_unmark_spaces(char *s, size_t len) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
            s[o++] = ' ';
            i += 3;
        } else {
            s[o++] = s[i++];
        }
    }
    return o;
}
