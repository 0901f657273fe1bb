/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab_bpe: the vocabulary of a tokenizer.json, as the converter reads
 * it through transformers' fast tokenizer: LlamaHfVocab (llama-2 style BPE
 * with byte fallback) and get_vocab_base (byte-level BPE), with the
 * tokenizer's meanings the reference outputs were made with (the
 * hf-oracle's stand-in, ../shared/tools/hf-oracle/shim/transformers): vocab = the
 * model's vocab, then each added token set over it by content; vocab_size =
 * the model's vocab only; added_tokens_decoder = {id: added token}, the last
 * entry of an id winning; get_added_vocab = {content: id} in id order;
 * all_special_tokens = tokenizer_config.json's bos/eos/unk/sep/pad/cls/mask
 * and additional_special_tokens present in vocab, first copy kept.
 * And the pre-tokenizer's name (see hf_vocab.h).
 */
#include "hf_vocab_internal.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ---- a dict {text: id} keeping insertion order ---------------------------------- */

typedef struct dict_entry {
    const char *key;
    size_t len;
    int64_t id;
} dict_entry;

typedef struct dict {
    dict_entry *e;
    size_t n, cap;
    size_t *slots;  /* index + 1; 0 = empty */
    size_t n_slots; /* power of two */
} dict;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int dict_init(dict *d, size_t expect) {
    memset(d, 0, sizeof *d);
    d->n_slots = 64;
    while (d->n_slots < expect * 2 + 2) d->n_slots *= 2;
    d->cap = expect + 16;
    d->slots = calloc(d->n_slots, sizeof *d->slots);
    d->e = malloc(d->cap * sizeof *d->e);
    return d->slots != NULL && d->e != NULL ? 0 : -1;
}

static void dict_free(dict *d) {
    free(d->slots);
    free(d->e);
}

static size_t *dict_slot(const dict *d, const char *key, size_t len) {
    size_t i = (size_t)hash_bytes(key, len) & (d->n_slots - 1);
    for (;;) {
        size_t *s = &d->slots[i];
        if (*s == 0) return s;
        const dict_entry *e = &d->e[*s - 1];
        if (e->len == len && memcmp(e->key, key, len) == 0) return s;
        i = (i + 1) & (d->n_slots - 1);
    }
}

static const dict_entry *dict_find(const dict *d, const char *key, size_t len) {
    const size_t *s = dict_slot(d, key, len);
    return *s ? &d->e[*s - 1] : NULL;
}

/* d[key] = id: replaced in place when present, appended otherwise. */
static int dict_put(dict *d, const char *key, size_t len, int64_t id) {
    size_t *s = dict_slot(d, key, len);
    if (*s) {
        d->e[*s - 1].id = id;
        return 0;
    }
    if (d->n == d->cap || (d->n + 1) * 2 > d->n_slots) return -1; /* sized by dict_init */
    d->e[d->n] = (dict_entry){ key, len, id };
    *s = ++d->n;
    return 0;
}

/* ---- what the tokenizer.json gives ------------------------------------------------ */

typedef struct added_ref added_ref;
typedef struct fast_tok {
    const anvil_json_value *model_vocab;
    const anvil_json_value *added; /* added_tokens array or NULL */
    size_t base;                   /* len(model.vocab) */
    dict vocab;                    /* the merged vocab */
    dict added_vocab;              /* get_added_vocab() */
    added_ref *dec;                /* added_tokens_decoder, id order */
    size_t n_dec;
} fast_tok;

static int bad_json(const hv_load *l, const char *what, anvil_error *err) {
    return anvil__error_set(err, ANVIL_E_FORMAT, "%s: %s; fix or re-download the file", l->tok_path, what);
}

static const anvil_json_value *tok_model(const hv_load *l, anvil_error *err) {
    const anvil_json_value *m = anvil__json_get(l->tok, "model");
    if (m == NULL || m->kind != ANVIL_JSON_OBJECT_BEGIN) {
        bad_json(l, "no \"model\" object", err);
        return NULL;
    }
    if (anvil__json_str(anvil__json_get(m, "type")) == NULL) {
        bad_json(l, "model.type is missing or not a string", err);
        return NULL;
    }
    return m;
}

static int added_id(const hv_load *l, const anvil_json_value *t, int64_t *id, const char **content, size_t *len,
                    anvil_error *err) {
    const anvil_json_value *c = anvil__json_get(t, "content");
    if (t->kind != ANVIL_JSON_OBJECT_BEGIN || anvil__json_i64(anvil__json_get(t, "id"), id) != 0 || *id < 0 ||
        *id > INT32_MAX || anvil__json_str(c) == NULL) {
        return bad_json(l, "an added_tokens entry without an integer \"id\" and a string \"content\"", err);
    }
    *content = c->text;
    *len = c->len;
    return ANVIL_OK;
}

typedef struct added_ref {
    int64_t id;
    size_t idx; /* position in added_tokens */
    const anvil_json_value *node;
    const char *content;
    size_t len;
} added_ref;

static int cmp_ref(const void *a, const void *b) {
    const added_ref *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* added_tokens_decoder (ft->dec, id order, the last entry of an id kept)
 * and get_added_vocab() (ft->added_vocab). */
static int build_added_vocab(const hv_load *l, fast_tok *ft, anvil_error *err) {
    const size_t n = ft->added != NULL ? ft->added->n_items : 0;
    ft->dec = malloc((n ? n : 1) * sizeof *ft->dec);
    if (ft->dec == NULL || dict_init(&ft->added_vocab, n) != 0) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    }
    for (size_t i = 0; i < n; ++i) {
        added_ref *r = &ft->dec[i];
        r->idx = i;
        r->node = ft->added->items[i];
        const int rc = added_id(l, r->node, &r->id, &r->content, &r->len, err);
        if (rc != ANVIL_OK) return rc;
    }
    qsort(ft->dec, n, sizeof *ft->dec, cmp_ref);
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
        if (m > 0 && ft->dec[m - 1].id == ft->dec[i].id) m--;
        ft->dec[m++] = ft->dec[i];
    }
    ft->n_dec = m;
    for (size_t j = 0; j < m; ++j) dict_put(&ft->added_vocab, ft->dec[j].content, ft->dec[j].len, ft->dec[j].id);
    return ANVIL_OK;
}

/* added_tokens_decoder[id], or NULL. */
static const added_ref *decoder_at(const fast_tok *ft, int64_t id) {
    size_t lo = 0, hi = ft->n_dec;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (ft->dec[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < ft->n_dec && ft->dec[lo].id == id ? &ft->dec[lo] : NULL;
}

static int load_fast(const hv_load *l, fast_tok *ft, anvil_error *err) {
    memset(ft, 0, sizeof *ft);
    const anvil_json_value *m = tok_model(l, err);
    if (m == NULL) return ANVIL_E_FORMAT;
    ft->model_vocab = anvil__json_get(m, "vocab");
    if (ft->model_vocab == NULL || ft->model_vocab->kind != ANVIL_JSON_OBJECT_BEGIN) {
        return bad_json(l, "model.vocab is not an object {token: id}", err);
    }
    ft->added = anvil__json_get(l->tok, "added_tokens");
    if (ft->added != NULL && ft->added->kind != ANVIL_JSON_ARRAY_BEGIN) ft->added = NULL;
    ft->base = ft->model_vocab->n_items;
    const size_t n_added = ft->added != NULL ? ft->added->n_items : 0;
    if (dict_init(&ft->vocab, ft->base + n_added) != 0) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    }
    for (size_t i = 0; i < ft->base; ++i) {
        const anvil_json_value *e = ft->model_vocab->items[i];
        int64_t id;
        if (anvil__json_i64(e, &id) != 0 || id < 0 || id > INT32_MAX) {
            return bad_json(l, "a model.vocab id is not an integer in 0..2^31-1", err);
        }
        dict_put(&ft->vocab, e->key, strlen(e->key), id);
    }
    for (size_t i = 0; i < n_added; ++i) {
        int64_t id = 0;
        const char *c = NULL;
        size_t len = 0;
        const int rc = added_id(l, ft->added->items[i], &id, &c, &len, err);
        if (rc != ANVIL_OK) return rc;
        dict_put(&ft->vocab, c, len, id);
    }
    return build_added_vocab(l, ft, err);
}

static void free_fast(fast_tok *ft) {
    free(ft->dec);
    dict_free(&ft->vocab);
    dict_free(&ft->added_vocab);
}

/* reverse_vocab for ids < n: the last text (in dict order) of each id; -1
 * where none. */
static int64_t *reverse_vocab(const fast_tok *ft, uint64_t n) {
    int64_t *rev = malloc((n ? n : 1) * sizeof *rev);
    if (rev == NULL) return NULL;
    for (uint64_t i = 0; i < n; ++i) rev[i] = -1;
    for (size_t i = 0; i < ft->vocab.n; ++i) {
        if ((uint64_t)ft->vocab.e[i].id < n) rev[ft->vocab.e[i].id] = (int64_t)i;
    }
    return rev;
}

/* ---- LlamaHfVocab ------------------------------------------------------------------- */

int hv_bpe_is_llama_hf(hv_load *l, int *yes, anvil_error *err) {
    *yes = 0;
    const anvil_json_value *m = tok_model(l, err);
    if (m == NULL) return ANVIL_E_FORMAT;
    const int bpe = hv_str_is(anvil__json_get(m, "type"), "BPE");
    const anvil_json_value *bf = anvil__json_get(m, "byte_fallback");
    const int byte_fallback_default_true = bf == NULL ? 1 : hf_truthy(bf);
    if (bpe && hf_truthy(anvil__json_get(m, "ignore_merges")) && !byte_fallback_default_true) {
        return ANVIL_OK; /* Llama 3: converted as gpt2 */
    }
    if (!bpe || !hf_truthy(bf)) return ANVIL_OK;
    const anvil_json_value *dec = anvil__json_get(l->tok, "decoder");
    if (dec == NULL) return bad_json(l, "no \"decoder\"", err);
    if (dec->kind == ANVIL_JSON_NULL) return ANVIL_OK; /* the converter's TypeError: gpt2 */
    if (dec->kind != ANVIL_JSON_OBJECT_BEGIN || anvil__json_get(dec, "type") == NULL) {
        return bad_json(l, "decoder.type is missing", err);
    }
    *yes = hv_str_is(anvil__json_get(dec, "type"), "Sequence");
    return ANVIL_OK;
}

/* all_special_tokens (texts in tx) and all_special_ids (ids). */
static int add_special(const fast_tok *ft, const anvil_json_value *t, const anvil_json_value **tx, int64_t *ids,
                       size_t *n, size_t cap) {
    if (t != NULL && t->kind == ANVIL_JSON_OBJECT_BEGIN) t = anvil__json_get(t, "content");
    if (!hf_truthy(t) || t->kind != ANVIL_JSON_STRING) return 0;
    const dict_entry *e = dict_find(&ft->vocab, t->text, t->len);
    if (e == NULL || *n == cap) return 0;
    for (size_t i = 0; i < *n; ++i) {
        if (tx[i]->len == t->len && memcmp(tx[i]->text, t->text, t->len) == 0) return 0;
    }
    tx[*n] = t;
    ids[(*n)++] = e->id;
    return 0;
}

static int in_texts(const anvil_json_value *const *tx, size_t n, const char *s, size_t len) {
    for (size_t i = 0; i < n; ++i) {
        if (tx[i]->len == len && memcmp(tx[i]->text, s, len) == 0) return 1;
    }
    return 0;
}

static size_t special_ids(const hv_load *l, const fast_tok *ft, const anvil_json_value **tx, int64_t *ids,
                          size_t cap) {
    static const char *const keys[] = { "bos_token", "eos_token", "unk_token", "sep_token",
                                        "pad_token", "cls_token", "mask_token" };
    size_t n = 0;
    if (l->tcfg == NULL) return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
        add_special(ft, anvil__json_get(l->tcfg, keys[i]), tx, ids, &n, cap);
    const anvil_json_value *more = anvil__json_get(l->tcfg, "additional_special_tokens");
    for (size_t i = 0; more != NULL && more->kind == ANVIL_JSON_ARRAY_BEGIN && i < more->n_items; ++i) {
        add_special(ft, more->items[i], tx, ids, &n, cap);
    }
    return n;
}

static int in_ids(const int64_t *ids, size_t n, int64_t id) {
    for (size_t i = 0; i < n; ++i) {
        if (ids[i] == id) return 1;
    }
    return 0;
}

static int is_byte_token(const char *s, size_t len) {
    static const char hex[] = "0123456789ABCDEFabcdef";
    return len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] != '\0' && s[4] != '\0' &&
           strchr(hex, s[3]) != NULL && strchr(hex, s[4]) != NULL;
}

static int llama_hf_tokens(hv_load *l, const fast_tok *ft, anvil_error *err) {
    anvil__hf_vocab *v = l->v;
    size_t n_added = 0;
    for (size_t j = 0; j < ft->added_vocab.n; ++j) n_added += (uint64_t)ft->added_vocab.e[j].id >= ft->base;
    const anvil_json_value *more = l->tcfg != NULL ? anvil__json_get(l->tcfg, "additional_special_tokens") : NULL;
    const size_t cap = 8 + (more != NULL ? more->n_items : 0);
    int64_t *ids = malloc(cap * sizeof *ids);
    const anvil_json_value **tx = malloc(cap * sizeof *tx);
    const size_t n_ids = ids != NULL && tx != NULL ? special_ids(l, ft, tx, ids, cap) : 0;
    int64_t *rev = reverse_vocab(ft, ft->base);
    int rc = rev == NULL || ids == NULL || tx == NULL
                 ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory")
                 : hv_alloc_tokens(v, ft->base + n_added, 1, err);
    for (size_t i = 0; rc == ANVIL_OK && i < ft->base; ++i) {
        if (rev[i] < 0) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: no token has id %zu (ids 0..%zu must all be used)",
                                  l->tok_path, i, ft->base - 1);
            break;
        }
        const dict_entry *e = &ft->vocab.e[rev[i]];
        const int type = is_byte_token(e->key, e->len)    ? HV_BYTE
                         : in_ids(ids, n_ids, (int64_t)i) ? HV_CONTROL
                                                          : HV_NORMAL;
        rc = hv_put_token(v, i, e->key, e->len, -1000.0f, type, 0, err);
    }
    /* the added tokens past the model's vocab, in id order (stable) */
    size_t k = ft->base;
    for (size_t j = 0; rc == ANVIL_OK && j < ft->added_vocab.n; ++j) {
        const dict_entry *e = &ft->added_vocab.e[j];
        if ((uint64_t)e->id < ft->base) continue;
        const int special = in_texts(tx, n_ids, e->key, e->len);
        rc = hv_put_token(v, k++, e->key, e->len, -1000.0f, special ? HV_CONTROL : HV_USER_DEFINED, 0, err);
    }
    free(rev);
    free(ids);
    free(tx);
    return rc;
}

int hv_llama_hf_vocab(hv_load *l, anvil_error *err) {
    fast_tok ft;
    int rc = load_fast(l, &ft, err);
    if (rc == ANVIL_OK) rc = llama_hf_tokens(l, &ft, err);
    free_fast(&ft);
    if (rc != ANVIL_OK) return rc;
    return hv_llama_finish(l, "llama-hf", err);
}

/* ---- byte-level BPE (get_vocab_base) ------------------------------------------------ */

static int gpt2_tokens(hv_load *l, const fast_tok *ft, anvil_error *err) {
    anvil__hf_vocab *v = l->v;
    char q[256];
    const uint64_t vs = l->has_vocab_size ? (uint64_t)l->vocab_size : ft->vocab.n;
    for (size_t i = 0; i < ft->vocab.n; ++i) {
        if ((uint64_t)ft->vocab.e[i].id >= vs) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: token %s has id %lld, not below the vocab_size %llu of %s "
                                    "(the converter asserts this too)",
                                    l->tok_path, hv_quote(q, sizeof q, ft->vocab.e[i].key, ft->vocab.e[i].len),
                                    (long long)ft->vocab.e[i].id, (unsigned long long)vs, l->config_path);
        }
    }
    int64_t *rev = reverse_vocab(ft, vs);
    int rc = rev == NULL ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory")
                         : hv_alloc_tokens(v, vs, 0, err);
    for (uint64_t i = 0; rc == ANVIL_OK && i < vs; ++i) {
        if (rev[i] < 0) {
            char *t = hv_printf(&v->arena, "[PAD%llu]", (unsigned long long)i);
            if (t == NULL) rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
            else rc = hv_put_token(v, i, t, strlen(t), -1000.0f, HV_UNUSED, 0, err);
            continue;
        }
        const dict_entry *e = &ft->vocab.e[rev[i]];
        if (dict_find(&ft->added_vocab, e->key, e->len) == NULL) {
            rc = hv_put_token(v, i, e->key, e->len, -1000.0f, HV_NORMAL, 0, err);
            continue;
        }
        const added_ref *a = decoder_at(ft, (int64_t)i);
        if (a == NULL) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                  "%s: added token %s has another id than %llu, which the "
                                  "vocabulary gives it",
                                  l->tok_path, hv_quote(q, sizeof q, e->key, e->len), (unsigned long long)i);
        } else if (hf_truthy(anvil__json_get(a->node, "special")) || hv_looks_special(e->key, e->len)) {
            rc = hv_put_token(v, i, e->key, e->len, -1000.0f, HV_CONTROL, 0, err);
        } else {
            rc = hv_put_token(v, i, e->key, e->len, -1000.0f, HV_USER_DEFINED, 1, err);
        }
    }
    free(rev);
    return rc;
}

/* ---- the pre-tokenizer's name -------------------------------------------------------- */

static const char LLAMA3_RE[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_RE[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* Qwen3.5's: Qwen 2's with marks (p{M}) joined to letters */
static const char QWEN35_RE[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* gpt-4o's (o200k; gpt-oss ships it): llama-vocab's LLAMA_VOCAB_PRE_TYPE_GPT4O */
static const char GPT4O_RE[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|"
    "'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|"
    "'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static int is_false(const anvil_json_value *j) { return j != NULL && j->kind == ANVIL_JSON_FALSE; }

/* The Split regex of Sequence[Split(Regex, Isolated, invert false),
 * ByteLevel(add_prefix_space false, use_regex false)], or NULL with why. */
static const anvil_json_value *split_regex(const anvil_json_value *pre, const char **why) {
    const anvil_json_value *seq = anvil__json_get(pre, "pretokenizers");
    *why = "it is not Sequence[Split, ByteLevel]";
    if (!hv_str_is(anvil__json_get(pre, "type"), "Sequence") || seq == NULL || seq->kind != ANVIL_JSON_ARRAY_BEGIN ||
        seq->n_items != 2) {
        return NULL;
    }
    const anvil_json_value *split = seq->items[0], *bl = seq->items[1];
    if (!hv_str_is(anvil__json_get(split, "type"), "Split") || !hv_str_is(anvil__json_get(bl, "type"), "ByteLevel")) {
        return NULL;
    }
    const anvil_json_value *re = anvil__json_get(anvil__json_get(split, "pattern"), "Regex");
    *why = "its Split is not an isolating, non-inverted Regex split";
    if (anvil__json_str(re) == NULL || !hv_str_is(anvil__json_get(split, "behavior"), "Isolated") ||
        !is_false(anvil__json_get(split, "invert"))) {
        return NULL;
    }
    *why = "its ByteLevel step adds a prefix space or splits by its own regex";
    if (!is_false(anvil__json_get(bl, "add_prefix_space")) || !is_false(anvil__json_get(bl, "use_regex"))) {
        return NULL;
    }
    return re;
}

/* DeepSeek-V3's pre-tokenizer: Sequence[Split(digits 1-3), Split(CJK and
 * kana runs), Split(its word regex), ByteLevel(no prefix space, no
 * regex)], each Split isolating and not inverted; normalizer null or an
 * empty Sequence. convert names it deepseek-v3 (by its hash). */
static const char DS3_DIGITS_RE[] = "\\p{N}{1,3}";
/* [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+ in UTF-8 */
static const char DS3_CJK_RE[] = "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+";
static const char DS3_WORD_RE[] =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
static const char *const DEEPSEEK_V3_RE[3] = { DS3_DIGITS_RE, DS3_CJK_RE, DS3_WORD_RE };

static int is_deepseek_v3(const anvil_json_value *pre, const anvil_json_value *norm) {
    const anvil_json_value *seq = anvil__json_get(pre, "pretokenizers");
    if (!hv_str_is(anvil__json_get(pre, "type"), "Sequence") || seq == NULL || seq->kind != ANVIL_JSON_ARRAY_BEGIN ||
        seq->n_items != 4)
        return 0;
    for (size_t i = 0; i < 3; ++i) {
        const anvil_json_value *sp = seq->items[i];
        if (!hv_str_is(anvil__json_get(sp, "type"), "Split") ||
            !hv_str_is(anvil__json_get(sp, "behavior"), "Isolated") || !is_false(anvil__json_get(sp, "invert")) ||
            !hv_str_is(anvil__json_get(anvil__json_get(sp, "pattern"), "Regex"), DEEPSEEK_V3_RE[i]))
            return 0;
    }
    const anvil_json_value *bl = seq->items[3];
    if (!hv_str_is(anvil__json_get(bl, "type"), "ByteLevel") || !is_false(anvil__json_get(bl, "add_prefix_space")) ||
        !is_false(anvil__json_get(bl, "use_regex")))
        return 0;
    if (anvil__json_is_null(norm)) return 1;
    const anvil_json_value *ns = anvil__json_get(norm, "normalizers");
    return hv_str_is(anvil__json_get(norm, "type"), "Sequence") && ns != NULL && ns->kind == ANVIL_JSON_ARRAY_BEGIN &&
           ns->n_items == 0;
}

static int name_pre(hv_load *l, anvil_error *err) {
    const anvil_json_value *pre = anvil__json_get(l->tok, "pre_tokenizer");
    const anvil_json_value *norm = anvil__json_get(l->tok, "normalizer");
    const char *why = "it is missing";
    if (pre != NULL && is_deepseek_v3(pre, norm)) {
        l->v->pre = "deepseek-v3";
        return ANVIL_OK;
    }
    const anvil_json_value *re = pre != NULL ? split_regex(pre, &why) : NULL;
    if (re != NULL && hv_str_is(re, LLAMA3_RE)) {
        why = "its regex is Llama 3's but the normalizer is not null";
        /* GLM-4.5's tokenizer.json defines the same Split(Llama 3 regex) +
         * ByteLevel; convert's hash table names GLM's vocabulary glm4
         * (llama.cpp's CHATGLM4 pre-type runs that regex) */
        if (anvil__json_is_null(norm)) l->v->pre = l->is_glm ? "glm4" : "llama-bpe";
    } else if (re != NULL && hv_str_is(re, QWEN2_RE)) {
        why = "its regex is Qwen 2's but the normalizer is not NFC";
        if (norm != NULL && norm->kind == ANVIL_JSON_OBJECT_BEGIN && norm->n_items == 1 &&
            hv_str_is(anvil__json_get(norm, "type"), "NFC")) {
            l->v->pre = "qwen2";
        }
    } else if (re != NULL && hv_str_is(re, QWEN35_RE)) {
        /* convert's hash table names Qwen3.5's tokenizer qwen35 */
        why = "its regex is Qwen3.5's but the normalizer is not NFC";
        if (norm != NULL && norm->kind == ANVIL_JSON_OBJECT_BEGIN && norm->n_items == 1 &&
            hv_str_is(anvil__json_get(norm, "type"), "NFC")) {
            l->v->pre = "qwen35";
        }
    } else if (re != NULL && hv_str_is(re, GPT4O_RE)) {
        why = "its regex is gpt-4o's but the normalizer is not null";
        if (anvil__json_is_null(norm)) l->v->pre = "gpt-4o";
    } else if (re != NULL) {
        why = "its Split regex is not Llama 3's, Qwen 2's, Qwen3.5's or gpt-4o's";
    }
    if (l->v->pre != NULL) return ANVIL_OK;
    return anvil__error_set(
        err, ANVIL_E_UNSUPPORTED,
        "%s: the byte-level BPE pre-tokenizer is not one anvil can name (%s); anvil "
        "convert names it from its definition and knows llama-bpe (Llama 3), "
        "qwen2 (Qwen 2/2.5/3), qwen35 (Qwen3.5), gpt-4o (gpt-oss), deepseek-v3 and glm4 (GLM-4.5): use "
        "convert_hf_to_gguf.py for "
        "this tokenizer",
        l->tok_path, why);
}

/* get_added_vocab()[content] for each content: the id of the added token
 * of that content (the last one: a dict keeps the last); missing, the
 * converter's KeyError, refused by name. */
static int glm_added_ids(hv_load *l, const char *const *contents, int64_t *ids, size_t n, anvil_error *err) {
    const anvil_json_value *added = anvil__json_get(l->tok, "added_tokens");
    for (size_t k = 0; k < n; ++k) {
        ids[k] = -1;
        for (size_t i = 0; added != NULL && added->kind == ANVIL_JSON_ARRAY_BEGIN && i < added->n_items; ++i) {
            const anvil_json_value *t = added->items[i];
            int64_t id = 0;
            if (hv_str_is(anvil__json_get(t, "content"), contents[k]) &&
                anvil__json_i64(anvil__json_get(t, "id"), &id) == 0 && id >= 0)
                ids[k] = id;
        }
        if (ids[k] < 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: Glm4MoeForCausalLM's vocabulary needs the added token \"%s\" (GLM's special "
                                    "tokens), which added_tokens lacks; convert_hf_to_gguf.py stops on it too",
                                    l->tok_path, contents[k]);
        }
    }
    return ANVIL_OK;
}

int hv_gpt2_vocab(hv_load *l, anvil_error *err) {
    if (l->tok == NULL && hf_file_exists(l->dir, "tiktoken.model")) {
        /* Kimi-K2's layout: the converter builds the vocabulary by running
         * the checkpoint's own Python tokenizer (trust_remote_code). */
        return anvil__error_set(
            err, ANVIL_E_UNSUPPORTED,
            "%s: a tiktoken tokenizer (tiktoken.model, no tokenizer.json; Kimi-K2's layout) is not "
            "supported: convert_hf_to_gguf.py reads it through the checkpoint's own Python code; "
            "use it for this model",
            l->dir);
    }
    if (l->tok == NULL) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s: no tokenizer.model and no tokenizer.json: anvil convert needs one "
                                "of them (a folder with only vocab.json/merges.txt is not supported)",
                                l->dir);
    }
    const anvil_json_value *m = tok_model(l, err);
    if (m == NULL) return ANVIL_E_FORMAT;
    const anvil_json_value *type = anvil__json_get(m, "type");
    if (!hv_str_is(type, "BPE")) {
        char q[256];
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: model.type %s is not supported: anvil "
                                "convert reads BPE tokenizers",
                                l->tok_path, hv_quote(q, sizeof q, type->text, type->len));
    }
    fast_tok ft;
    int rc = load_fast(l, &ft, err);
    if (rc == ANVIL_OK) rc = name_pre(l, err);
    if (rc == ANVIL_OK) rc = gpt2_tokens(l, &ft, err);
    free_fast(&ft);
    if (rc != ANVIL_OK) return rc;
    anvil__hf_vocab *v = l->v;
    v->kind = "gpt2";
    rc = hv_set_str(v, "tokenizer.ggml.model", "gpt2", 4, err);
    if (rc == ANVIL_OK) rc = hv_set_str(v, "tokenizer.ggml.pre", v->pre, strlen(v->pre), err);
    if (rc == ANVIL_OK)
        rc = hv_set_array(v, "tokenizer.ggml.tokens", ANVIL_GGUF_TYPE_STRING, v->tokens, v->n_tokens, err);
    if (rc == ANVIL_OK)
        rc = hv_set_array(v, "tokenizer.ggml.token_type", ANVIL_GGUF_TYPE_I32, v->types, v->n_tokens, err);
    if (rc != ANVIL_OK) return rc;
    hv_special_opts o = { .load_merges = 1 };
    if (!l->is_glm) return hv_special_vocab(l, &o, err);
    /* _set_vocab_glm: bos [gMASK], eot <|user|>, unk <|endoftext|>, eom
     * <|observation|> from get_added_vocab(), after the files' own ids */
    static const char *const types[] = { "bos", "eot", "unk", "eom" };
    static const char *const contents[] = { "[gMASK]", "<|user|>", "<|endoftext|>", "<|observation|>" };
    int64_t ids[4];
    rc = glm_added_ids(l, contents, ids, 4, err);
    if (rc != ANVIL_OK) return rc;
    o.extra_types = types;
    o.extra_ids = ids;
    o.n_extra = 4;
    return hv_special_vocab(l, &o, err);
}
