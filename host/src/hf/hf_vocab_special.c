/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab_special: gguf-py's SpecialVocab (vocab.py) -- merges, special
 * token ids, add_*_token, chat template and normalizer flags, read from
 * tokenizer.json, tokenizer_config.json, chat_template.jinja|json and
 * config.json with its rules, and set in add_to_gguf's order; and
 * hv_llama_finish, the ending the SentencePiece and LlamaHfVocab paths
 * share (their tokens, then this special vocab).
 *
 * Python values are modelled as JSON nodes (NULL = None); tokenizer_config
 * entries the original assigns to (bos/cls/eos/sep/eot/eom_token) are kept
 * as overrides. Comparisons follow Python's ==: two strings are equal when
 * their texts are; a string never equals a dict.
 *
 * merges.txt (when tokenizer.json has none) is read as _try_load_merges_txt
 * reads it: Python's text mode (\r and \r\n end lines), strip() and
 * split() on what str.isspace() calls whitespace.
 *
 * Not followed: additional_chat_templates/ (refused: the converter writes
 * their names from a Python set, in no fixed order). A list-form chat
 * template with several named templates gets tokenizer.chat_templates in
 * file order (the converter's order is its set's, which varies by run).
 */
#include "hf_vocab_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define SV_MAX_TYPES 16
#define SV_N_OV 6

static const char *const OV_KEYS[SV_N_OV] = { "bos_token", "cls_token", "eos_token",
                                              "sep_token", "eot_token", "eom_token" };

typedef struct sv_id {
    const char *typ;
    int64_t id;
} sv_id;

typedef struct sv_add {
    const char *typ;
    int val;
} sv_add;

typedef struct sv {
    hv_load *l;
    const hv_special_opts *o;
    const char *types[SV_MAX_TYPES];
    size_t n_types;
    sv_id ids[SV_MAX_TYPES];
    size_t n_ids;
    sv_add adds[SV_MAX_TYPES];
    size_t n_adds;
    const anvil_json_value *ov[SV_N_OV]; /* tokenizer_config overrides */
    int has_ov[SV_N_OV];
    const anvil_json_value *chat; /* chat_template: STRING or ARRAY, NULL = None */
    anvil_json_value *chat_owned; /* a tree the chat template lives in */
    char *chat_text;              /* chat_template.jinja's text */
    size_t chat_len;
    int lower, strip; /* -1 = None */
} sv;

/* ---- Python-like helpers ---------------------------------------------------------- */

static int py_eq(const anvil_json_value *a, const anvil_json_value *b) {
    if (a == NULL || b == NULL) return a == b;
    if (a->kind != ANVIL_JSON_STRING || b->kind != ANVIL_JSON_STRING) return a == b;
    return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
}

static int ov_index(const char *key) {
    for (int i = 0; i < SV_N_OV; ++i) {
        if (strcmp(OV_KEYS[i], key) == 0) return i;
    }
    return -1;
}

/* tokenizer_config.get(key) with the overrides. */
static const anvil_json_value *sv_get(const sv *s, const char *key) {
    const int i = ov_index(key);
    if (i >= 0 && s->has_ov[i]) return s->ov[i];
    return s->l->tcfg != NULL ? anvil__json_get(s->l->tcfg, key) : NULL;
}

static void sv_set(sv *s, const char *key, const anvil_json_value *val) {
    const int i = ov_index(key);
    s->ov[i] = val;
    s->has_ov[i] = 1;
}

static int sv_truthy(const sv *s) { return s->l->tcfg != NULL && s->l->tcfg->n_items > 0; }

static int has_type(const sv *s, const char *typ) {
    for (size_t i = 0; i < s->n_types; ++i) {
        if (strcmp(s->types[i], typ) == 0) return 1;
    }
    return 0;
}

static void set_add(sv *s, const char *typ, int val) {
    for (size_t i = 0; i < s->n_adds; ++i) {
        if (strcmp(s->adds[i].typ, typ) == 0) {
            s->adds[i].val = val;
            return;
        }
    }
    if (s->n_adds < SV_MAX_TYPES) s->adds[s->n_adds++] = (sv_add){ typ, val };
}

/* _set_special_token(typ, tid): only ints (a JSON bool is a Python int). */
static int set_special(sv *s, const char *typ, const anvil_json_value *tid, int64_t direct, int use_direct,
                       anvil_error *err) {
    int64_t id = direct;
    if (!use_direct) {
        if (tid == NULL) return ANVIL_OK;
        if (tid->kind == ANVIL_JSON_TRUE || tid->kind == ANVIL_JSON_FALSE) {
            id = tid->kind == ANVIL_JSON_TRUE;
        } else if (!anvil__json_is_int(tid)) {
            return ANVIL_OK;
        } else if (anvil__json_i64(tid, &id) != 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: the %s token id %s does not fit 64 bits", s->l->dir,
                                    typ, tid->text);
        }
    }
    if (id < 0) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: invalid value for special token type %s: %lld", s->l->dir,
                                typ, (long long)id);
    }
    if (s->o->has_n_vocab && (uint64_t)id >= s->o->n_vocab) return ANVIL_OK; /* out of range: skipped */
    for (size_t i = 0; i < s->n_ids; ++i) {
        if (strcmp(s->ids[i].typ, typ) == 0) return ANVIL_OK;
    }
    if (s->n_ids < SV_MAX_TYPES) {
        s->ids[s->n_ids++] = (sv_id){ typ, id };
    }
    return ANVIL_OK;
}

/* x.get(a, {}).get(b) for an element that may not be an object. */
static const anvil_json_value *get2(const anvil_json_value *x, const char *a, const char *b) {
    const anvil_json_value *y = anvil__json_get(x, a);
    return anvil__json_get(y, b);
}

/* ---- the post-processor ---------------------------------------------------------------- */

typedef struct sv_spec {
    const anvil_json_value *bos, *cls, *eos, *sep;
} sv_spec;

static void add_type(sv *s, const char *typ) {
    if (s->n_types < SV_MAX_TYPES) s->types[s->n_types++] = typ;
}

static void tmpl_single(sv *s, sv_spec *p, const anvil_json_value *single, const anvil_json_value **first,
                        const anvil_json_value **last) {
    const int tc = sv_truthy(s);
    *first = get2(single->items[0], "SpecialToken", "id");
    if (hf_truthy(*first)) {
        if (!tc) {
            p->bos = *first;
        } else if (!py_eq(*first, p->bos) && !py_eq(*first, p->cls)) {
            if (!hf_truthy(p->bos)) sv_set(s, "bos_token", p->bos = *first);
            if (!hf_truthy(p->cls)) sv_set(s, "cls_token", p->cls = *first);
        }
        set_add(s, "bos", py_eq(*first, p->bos) || py_eq(*first, p->cls));
    }
    *last = get2(single->items[single->n_items - 1], "SpecialToken", "id");
    if (hf_truthy(*last)) {
        if (!tc) {
            p->eos = *last;
        } else if (!py_eq(*last, p->eos)) {
            if (!has_type(s, "eot")) {
                add_type(s, "eot");
                sv_set(s, "eot_token", p->eos);
            } else if (!has_type(s, "eom")) {
                add_type(s, "eom");
                sv_set(s, "eom_token", p->eos);
            }
            sv_set(s, "eos_token", p->eos = *last);
        }
        set_add(s, "eos", py_eq(*last, p->eos));
    }
}

static void tmpl_pair(sv *s, sv_spec *p, const anvil_json_value *pair, const anvil_json_value *first,
                      const anvil_json_value *last) {
    size_t lo = 0, hi = pair->n_items;
    if (hf_truthy(first) && py_eq(get2(pair->items[0], "SpecialToken", "id"), first)) lo = 1;
    if (hf_truthy(last) && py_eq(get2(pair->items[hi - 1], "SpecialToken", "id"), last)) hi--;
    if (hi <= lo) return;
    const anvil_json_value *a = get2(pair->items[lo], "Sequence", "id");
    const anvil_json_value *b = get2(pair->items[hi - 1], "Sequence", "id");
    if (!hv_str_is(a, "A") || !hv_str_is(b, "B") || hi - lo < 3) return;
    int add_sep = 0;
    const anvil_json_value *e = get2(pair->items[lo + 1], "SpecialToken", "id");
    if (hf_truthy(e) && (py_eq(e, p->sep) || py_eq(e, p->eos)) && !hf_truthy(last)) add_sep = 1;
    if (hi - lo - 2 == 2) {
        e = get2(pair->items[lo + 2], "SpecialToken", "id");
        if (hf_truthy(e) && (py_eq(e, p->sep) || py_eq(e, p->eos))) add_sep = 1;
    }
    set_add(s, "sep", add_sep);
    if (add_sep && !hf_truthy(p->sep) && sv_truthy(s)) sv_set(s, "sep_token", p->eos);
}

static void roberta(sv *s, sv_spec *p, const anvil_json_value *proc) {
    set_add(s, "bos", 1);
    set_add(s, "eos", 1);
    set_add(s, "sep", 1);
    if (!hf_truthy(p->cls) && sv_truthy(s)) {
        const anvil_json_value *c = anvil__json_get(proc, "cls");
        p->cls = c != NULL ? (c->n_items > 0 ? c->items[0] : NULL) : p->bos;
        sv_set(s, "cls_token", p->cls);
    }
    if (!hf_truthy(p->sep) && sv_truthy(s)) {
        const anvil_json_value *c = anvil__json_get(proc, "sep");
        p->sep = c != NULL ? (c->n_items > 0 ? c->items[0] : NULL) : p->eos;
        sv_set(s, "sep_token", p->sep);
    }
}

static void post_processor(sv *s) {
    const int tc = sv_truthy(s);
    sv_spec p = { sv_get(s, "bos_token"), sv_get(s, "cls_token"), sv_get(s, "eos_token"), sv_get(s, "sep_token") };
    if (!hf_truthy(p.bos) && hf_truthy(p.cls) && tc) sv_set(s, "bos_token", p.bos = p.cls);
    if (!hf_truthy(p.eos) && hf_truthy(p.sep) && tc) sv_set(s, "eos_token", p.eos = p.sep);
    const anvil_json_value *pp = anvil__json_get(s->l->tok, "post_processor");
    if (!hf_truthy(pp) || pp->kind != ANVIL_JSON_OBJECT_BEGIN) return;
    const anvil_json_value *list = anvil__json_get(pp, "processors");
    const size_t n = list != NULL && list->kind == ANVIL_JSON_ARRAY_BEGIN ? list->n_items : 1;
    for (size_t i = 0; i < n; ++i) {
        const anvil_json_value *proc = list != NULL && list->kind == ANVIL_JSON_ARRAY_BEGIN ? list->items[i] : pp;
        const anvil_json_value *type = anvil__json_get(proc, "type");
        if (hv_str_is(type, "RobertaProcessing")) {
            roberta(s, &p, proc);
        } else if (hv_str_is(type, "TemplateProcessing")) {
            const anvil_json_value *single = anvil__json_get(proc, "single"), *pair = anvil__json_get(proc, "pair");
            const anvil_json_value *first = NULL, *last = NULL;
            if (single != NULL && single->kind == ANVIL_JSON_ARRAY_BEGIN && single->n_items > 1) {
                tmpl_single(s, &p, single, &first, &last);
            }
            if (pair != NULL && pair->kind == ANVIL_JSON_ARRAY_BEGIN && pair->n_items > 0) {
                tmpl_pair(s, &p, pair, first, last);
            }
        }
    }
}

/* ---- merges -------------------------------------------------------------------------- */

/* One [a, b, ...] merge: the parts joined by ' ', a space inside a part
 * written as U+0120. */
static int join_pair(anvil__hf_vocab *v, const anvil_json_value *pair, anvil_gguf_str *out) {
    size_t n = 0;
    for (size_t i = 0; i < pair->n_items; ++i) {
        if (pair->items[i]->kind != ANVIL_JSON_STRING) return -1;
        n += pair->items[i]->len * 2 + 1;
    }
    char *buf = malloc(n + 1), *o = buf;
    if (buf == NULL) return -2;
    for (size_t i = 0; i < pair->n_items; ++i) {
        if (i > 0) *o++ = ' ';
        const anvil_json_value *p = pair->items[i];
        for (size_t k = 0; k < p->len; ++k) {
            if (p->text[k] == ' ') {
                *o++ = (char)0xc4;
                *o++ = (char)0xa0;
            } else {
                *o++ = p->text[k];
            }
        }
    }
    out->len = (size_t)(o - buf);
    out->ptr = hv_dup(&v->arena, buf, out->len);
    free(buf);
    return out->ptr == NULL ? -2 : 0;
}

static int load_merges(sv *s, anvil_error *err) {
    anvil__hf_vocab *v = s->l->v;
    const anvil_json_value *m = s->l->tok != NULL ? get2(s->l->tok, "model", "merges") : NULL;
    if (m == NULL || m->kind != ANVIL_JSON_ARRAY_BEGIN || m->n_items == 0) return ANVIL_OK;
    const anvil_json_value *m0 = m->items[0];
    const int strings = m0->kind == ANVIL_JSON_STRING;
    if (!strings &&
        !(m0->kind == ANVIL_JSON_ARRAY_BEGIN && m0->n_items == 2 && m0->items[0]->kind == ANVIL_JSON_STRING)) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: unknown tokenizer merges format (neither "
                                "\"a b\" strings nor [a, b] pairs)",
                                s->l->tok_path);
    }
    v->merges = calloc(m->n_items, sizeof *v->merges);
    if (v->merges == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < m->n_items; ++i) {
        const anvil_json_value *e = m->items[i];
        int bad = 0;
        if (strings) {
            bad = e->kind != ANVIL_JSON_STRING;
            v->merges[i].ptr = e->text;
            v->merges[i].len = e->len;
            if (!bad && (v->merges[i].ptr = hv_dup(&v->arena, e->text, e->len)) == NULL) bad = -2;
        } else {
            bad = e->kind != ANVIL_JSON_ARRAY_BEGIN ? -1 : join_pair(v, e, &v->merges[i]);
        }
        if (bad == -2) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
        if (bad) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: merge %zu is not of the form of merge 0 "
                                    "(all strings or all lists of strings)",
                                    s->l->tok_path, i);
        }
    }
    v->n_merges = m->n_items;
    return ANVIL_OK;
}

/* ---- chat template ------------------------------------------------------------------------ */

static int no_extra_templates(const sv *s, anvil_error *err) {
    char *d = hf_path_join(s->l->dir, "additional_chat_templates");
    if (d == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    DIR *dir = opendir(d);
    int found = 0;
    for (struct dirent *e; dir != NULL && (e = readdir(dir)) != NULL;) {
        const size_t n = strlen(e->d_name);
        found |= n > 6 && strcmp(e->d_name + n - 6, ".jinja") == 0;
    }
    if (dir != NULL) closedir(dir);
    int rc = ANVIL_OK;
    if (found) {
        rc = anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                              "%s: additional chat templates are not supported "
                              "(the converter writes them in no fixed order); remove the folder or use "
                              "convert_hf_to_gguf.py",
                              d);
    }
    free(d);
    return rc;
}

/* Python's text-mode read: \r\n and \r become \n. */
static size_t universal_newlines(char *t, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n; ++i) {
        if (t[i] == '\r') {
            t[o++] = '\n';
            if (i + 1 < n && t[i + 1] == '\n') ++i;
        } else {
            t[o++] = t[i];
        }
    }
    return o;
}

/* ---- merges.txt ------------------------------------------------------------------------------ */

/* Bytes of the whitespace character at s (Python's str.isspace), 0 if none. */
static size_t ws_len(const unsigned char *s, size_t n) {
    if (n == 0) return 0;
    if (s[0] < 0x80) return (s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x20);
    if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0)) return 2;
    if (n < 3) return 0;
    const unsigned cp = (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
    if ((s[0] & 0xf0) != 0xe0) return 0;
    return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
                   cp == 0x205f || cp == 0x3000
               ? 3
               : 0;
}

/* One line of merges.txt: its two whitespace-separated parts joined by a
 * space into *out (line.split(None, 3) must give exactly two); 0 when the
 * line is empty or malformed (the converter skips those). */
static int merge_line(anvil__hf_vocab *v, const char *l, size_t n, anvil_gguf_str *out) {
    const unsigned char *u = (const unsigned char *)l;
    size_t at[4][2], parts = 0, i = 0;
    while (i < n && parts < 4) {
        size_t w;
        while (i < n && (w = ws_len(u + i, n - i)) > 0) i += w;
        if (i >= n) break;
        at[parts][0] = i;
        if (parts == 3) {
            at[parts++][1] = n;
            break;
        }
        while (i < n && ws_len(u + i, n - i) == 0) ++i;
        at[parts++][1] = i;
    }
    if (parts != 2) return 0;
    const size_t a = at[0][1] - at[0][0], b = at[1][1] - at[1][0];
    char *m = hv_dup(&v->arena, l + at[0][0], a + 1 + b);
    if (m == NULL) return -1;
    m[a] = ' ';
    memcpy(m + a + 1, l + at[1][0], b);
    out->ptr = m;
    out->len = a + 1 + b;
    return 1;
}

/* _try_load_merges_txt: a first line starting with '#' (after strip) is a
 * header; every other non-empty line "a b" a merge. */
static int load_merges_txt(sv *s, const char *path, anvil_error *err) {
    anvil__hf_vocab *v = s->l->v;
    char *t = NULL;
    size_t n = 0;
    int rc = hv_read_file(path, &t, &n, err);
    if (rc != ANVIL_OK) return rc;
    if (anvil__utf8_valid_prefix((const unsigned char *)t, n) != n) {
        free(t);
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s is not valid UTF-8", path);
    }
    n = universal_newlines(t, n);
    size_t lines = 1;
    for (size_t i = 0; i < n; ++i) lines += t[i] == '\n';
    v->merges = calloc(lines, sizeof *v->merges);
    if (v->merges == NULL) rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    for (size_t i = 0, no = 0; rc == ANVIL_OK && i < n; ++no) {
        const char *e = memchr(t + i, '\n', n - i);
        const size_t len = e != NULL ? (size_t)(e - (t + i)) : n - i;
        size_t k = 0, w;
        while (k < len && (w = ws_len((const unsigned char *)t + i + k, len - k)) > 0) k += w;
        if (!(no == 0 && k < len && t[i + k] == '#')) {
            const int got = merge_line(v, t + i, len, &v->merges[v->n_merges]);
            if (got < 0) rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
            v->n_merges += got > 0;
        }
        i += len + 1;
    }
    free(t);
    return rc;
}

/* chat_template_alt: chat_template.jinja, else chat_template.json's
 * "chat_template". *alt NULL = None; jinja text in s->chat_text. */
static int chat_alt(sv *s, const anvil_json_value **alt, int *alt_is_text, anvil_error *err) {
    *alt = NULL;
    *alt_is_text = 0;
    char *jp = hf_path_join(s->l->dir, "chat_template.jinja"), *js = hf_path_join(s->l->dir, "chat_template.json");
    int rc = jp == NULL || js == NULL ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory") : ANVIL_OK;
    if (rc == ANVIL_OK && hv_is_file(jp)) {
        rc = hv_read_file(jp, &s->chat_text, &s->chat_len, err);
        if (rc == ANVIL_OK &&
            anvil__utf8_valid_prefix((const unsigned char *)s->chat_text, s->chat_len) != s->chat_len) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s is not valid UTF-8", jp);
        }
        if (rc == ANVIL_OK) s->chat_len = universal_newlines(s->chat_text, s->chat_len);
        if (rc == ANVIL_OK) rc = no_extra_templates(s, err);
        *alt_is_text = 1;
    } else if (rc == ANVIL_OK && hv_is_file(js)) {
        rc = anvil__json_tree_load(js, &s->chat_owned, err);
        if (rc == ANVIL_OK) *alt = anvil__json_get(s->chat_owned, "chat_template");
    }
    free(jp);
    free(js);
    return rc;
}

static int read_chat(sv *s, anvil_error *err) {
    const anvil_json_value *alt;
    int alt_is_text;
    int rc = chat_alt(s, &alt, &alt_is_text, err);
    if (rc != ANVIL_OK) return rc;
    const anvil_json_value *ct = anvil__json_get(s->l->tcfg, "chat_template");
    if (ct == NULL) {
        if (alt_is_text) return ANVIL_OK; /* s->chat_text */
        ct = alt;
    }
    free(s->chat_text);
    s->chat_text = NULL;
    if (ct != NULL && (ct->kind == ANVIL_JSON_STRING || ct->kind == ANVIL_JSON_ARRAY_BEGIN)) s->chat = ct;
    return ANVIL_OK;
}

/* ---- tokenizer_config.json and config.json ---------------------------------------------- */

/* The first added token of tokenizer.json whose content is `content`. */
static const anvil_json_value *added_id_of(const sv *s, const anvil_json_value *content) {
    const anvil_json_value *added = s->l->tok != NULL ? anvil__json_get(s->l->tok, "added_tokens") : NULL;
    if (added == NULL || added->kind != ANVIL_JSON_ARRAY_BEGIN) return NULL;
    for (size_t i = 0; i < added->n_items; ++i) {
        if (py_eq(anvil__json_get(added->items[i], "content"), content))
            return anvil__json_get(added->items[i], "id");
    }
    return NULL;
}

static int from_tokenizer_config(sv *s, anvil_error *err) {
    int rc = read_chat(s, err);
    for (size_t i = 0; rc == ANVIL_OK && i < s->n_types; ++i) {
        const char *typ = s->types[i];
        char key[64];
        snprintf(key, sizeof key, "add_%s_token", typ);
        const anvil_json_value *add = anvil__json_get(s->l->tcfg, key);
        if (add != NULL && (add->kind == ANVIL_JSON_TRUE || add->kind == ANVIL_JSON_FALSE)) {
            set_add(s, typ, add->kind == ANVIL_JSON_TRUE);
        }
        snprintf(key, sizeof key, "%s_token", typ);
        const anvil_json_value *entry = sv_get(s, key);
        if (entry != NULL && entry->kind == ANVIL_JSON_OBJECT_BEGIN) entry = anvil__json_get(entry, "content");
        if (entry == NULL || entry->kind != ANVIL_JSON_STRING) continue;
        rc = set_special(s, typ, added_id_of(s, entry), 0, 0, err);
    }
    return rc;
}

static int from_config(sv *s, anvil_error *err) {
    const anvil_json_value *tc = anvil__json_get(s->l->config, "text_config");
    for (size_t i = 0; i < s->n_types; ++i) {
        char key[64];
        snprintf(key, sizeof key, "%s_token_id", s->types[i]);
        const anvil_json_value *id = anvil__json_get(s->l->config, key);
        if (anvil__json_is_null(id) && tc != NULL) id = anvil__json_get(tc, key);
        const int rc = set_special(s, s->types[i], anvil__json_is_null(id) ? NULL : id, 0, 0, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

/* ---- the normalizer ----------------------------------------------------------------------- */

static void parse_normalizer(sv *s, const anvil_json_value *n, int depth) {
    const anvil_json_value *type = anvil__json_get(n, "type");
    if (hv_str_is(type, "Lowercase")) {
        s->lower = 1;
    } else if (hv_str_is(type, "StripAccents")) {
        s->strip = 1;
    } else if (hv_str_is(type, "BertNormalizer")) {
        const anvil_json_value *lc = anvil__json_get(n, "lowercase"), *sa = anvil__json_get(n, "strip_accents");
        if (lc != NULL) s->lower = lc->kind == ANVIL_JSON_NULL ? -1 : hf_truthy(lc);
        if (sa != NULL) s->strip = sa->kind == ANVIL_JSON_NULL ? -1 : hf_truthy(sa);
    } else if (hv_str_is(type, "Sequence") && depth < ANVIL_JSON_MAX_DEPTH) {
        const anvil_json_value *list = anvil__json_get(n, "normalizers");
        for (size_t i = 0; list != NULL && list->kind == ANVIL_JSON_ARRAY_BEGIN && i < list->n_items; ++i) {
            parse_normalizer(s, list->items[i], depth + 1);
        }
    }
}

/* ---- add_to_gguf ---------------------------------------------------------------------------- */

static const char *id_key(const char *typ) {
    static const char *const map[][2] = {
        { "bos", "tokenizer.ggml.bos_token_id" },     { "eos", "tokenizer.ggml.eos_token_id" },
        { "unk", "tokenizer.ggml.unknown_token_id" }, { "sep", "tokenizer.ggml.seperator_token_id" },
        { "pad", "tokenizer.ggml.padding_token_id" }, { "mask", "tokenizer.ggml.mask_token_id" },
        { "eot", "tokenizer.ggml.eot_token_id" },     { "eom", "tokenizer.ggml.eom_token_id" }
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; ++i) {
        if (strcmp(map[i][0], typ) == 0) return map[i][1];
    }
    return NULL; /* cls, prefix, ...: gguf-py has no handler and skips them */
}

/* Named chat templates a list may hold: models ship a handful; the bound
 * keeps the duplicate-name and key lookups (linear each) from going
 * quadratic on a hostile list of 100,000 names. */
#define HV_MAX_CHAT_TEMPLATES 1024

/* A list of {"name", "template"}: tokenizer.chat_template.<name> for each
 * named one, tokenizer.chat_templates, then the default. */
static int chat_list(sv *s, anvil_error *err) {
    anvil__hf_vocab *v = s->l->v;
    const anvil_json_value *def = NULL;
    if (s->chat->n_items > HV_MAX_CHAT_TEMPLATES) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: chat_template lists %zu templates; anvil converts at most %d (models ship a "
                                "handful): keep the ones you use",
                                s->l->tcfg_path, s->chat->n_items, HV_MAX_CHAT_TEMPLATES);
    }
    anvil_gguf_str *names = calloc(s->chat->n_items + 1, sizeof *names);
    size_t n = 0;
    int rc = names == NULL ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory") : ANVIL_OK;
    for (size_t i = 0; rc == ANVIL_OK && i < s->chat->n_items; ++i) {
        const anvil_json_value *c = s->chat->items[i], *nm = anvil__json_get(c, "name"),
                               *t = anvil__json_get(c, "template");
        /* the whole name, never cut: at most one byte per byte of it */
        char *name = malloc(nm != NULL && nm->kind == ANVIL_JSON_STRING ? nm->len + 1 : 1);
        if (name == NULL) {
            rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
            break;
        }
        size_t k = 0;
        for (size_t j = 0; nm != NULL && nm->kind == ANVIL_JSON_STRING && j < nm->len; ++j) {
            const unsigned char ch = (unsigned char)nm->text[j];
            if ((ch & 0xc0) == 0x80) continue; /* one '_' per non-ASCII character */
            name[k++] = (ch < 0x80 && ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')) || (ch >= '0' && ch <= '9')
                            ? (char)ch
                            : '_';
        }
        name[k] = '\0';
        if (k == 0 || t == NULL || t->kind == ANVIL_JSON_NULL) {
            free(name);
            continue;
        }
        if (t->kind != ANVIL_JSON_STRING) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: chat template \"%.200s\" is not a string",
                                  s->l->tcfg_path, name);
        } else if (strcmp(name, "default") == 0) {
            def = t;
        } else {
            char *key = hv_printf(&v->arena, "tokenizer.chat_template.%s", name);
            names[n].ptr = hv_dup(&v->arena, name, k);
            names[n].len = k;
            rc = key == NULL || names[n].ptr == NULL
                     ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory")
                     : hv_set_str(v, key, t->text, t->len, err);
            size_t j = 0;
            while (rc == ANVIL_OK && j < n && strcmp(names[j].ptr, name) != 0) ++j;
            n += rc == ANVIL_OK && j == n;
        }
        free(name);
    }
    anvil_gguf_str *kept =
        rc == ANVIL_OK && n > 0 ? (anvil_gguf_str *)hv_dup(&v->arena, (const char *)names, n * sizeof *names) : NULL;
    if (rc == ANVIL_OK && n > 0 && kept == NULL)
        rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    free(names);
    if (rc == ANVIL_OK && n > 0)
        rc = hv_set_array(v, "tokenizer.chat_templates", ANVIL_GGUF_TYPE_STRING, kept, n, err);
    if (rc == ANVIL_OK && def != NULL) rc = hv_set_str(v, "tokenizer.chat_template", def->text, def->len, err);
    return rc;
}

static int emit(sv *s, anvil_error *err) {
    anvil__hf_vocab *v = s->l->v;
    int rc = ANVIL_OK;
    if (v->n_merges > 0 && s->o->load_merges) {
        rc = hv_set_array(v, "tokenizer.ggml.merges", ANVIL_GGUF_TYPE_STRING, v->merges, v->n_merges, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < s->n_ids; ++i) {
        const char *key = id_key(s->ids[i].typ);
        if (key == NULL) continue;
        if (s->ids[i].id > (int64_t)UINT32_MAX) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: the %s token id %lld does not fit 32 bits", s->l->dir,
                                    s->ids[i].typ, (long long)s->ids[i].id);
        }
        rc = hv_set_u32(v, key, (uint32_t)s->ids[i].id, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < s->n_adds; ++i) {
        const char *t = s->adds[i].typ;
        if (strcmp(t, "bos") != 0 && strcmp(t, "eos") != 0 && strcmp(t, "sep") != 0) continue;
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.add_%s_token", t);
        rc = hv_set_bool(v, key, s->adds[i].val, err);
    }
    if (rc == ANVIL_OK && s->chat_text != NULL) {
        rc = hv_set_str(v, "tokenizer.chat_template", s->chat_text, s->chat_len, err);
    } else if (rc == ANVIL_OK && s->chat != NULL && s->chat->kind == ANVIL_JSON_STRING) {
        rc = hv_set_str(v, "tokenizer.chat_template", s->chat->text, s->chat->len, err);
    } else if (rc == ANVIL_OK && s->chat != NULL) {
        rc = chat_list(s, err);
    }
    if (rc == ANVIL_OK && s->lower >= 0) rc = hv_set_bool(v, "tokenizer.ggml.normalizer.lowercase", s->lower, err);
    if (rc == ANVIL_OK && s->strip >= 0)
        rc = hv_set_bool(v, "tokenizer.ggml.normalizer.strip_accents", s->strip, err);
    return rc;
}

/* ---- SpecialVocab ------------------------------------------------------------------------------ */

static int load_all(sv *s, anvil_error *err) {
    int rc = ANVIL_OK;
    hv_load *l = s->l;
    if (l->tok != NULL) {
        if (s->o->load_merges) rc = load_merges(s, err);
        const anvil_json_value *norm = anvil__json_get(l->tok, "normalizer");
        if (rc == ANVIL_OK && hf_truthy(norm)) parse_normalizer(s, norm, 0);
        if (rc == ANVIL_OK && l->tok->n_items > 0) post_processor(s);
    }
    if (rc == ANVIL_OK && sv_truthy(s)) rc = from_tokenizer_config(s, err);
    if (rc == ANVIL_OK) rc = from_config(s, err);
    if (rc == ANVIL_OK && s->o->load_merges && l->v->n_merges == 0) {
        char *mt = hf_path_join(l->dir, "merges.txt");
        if (mt == NULL) rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
        else if (hv_is_file(mt)) rc = load_merges_txt(s, mt, err);
        free(mt);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < s->o->n_extra; ++i) {
        rc = set_special(s, s->o->extra_types[i], NULL, s->o->extra_ids[i], 1, err);
    }
    return rc;
}

int hv_special_vocab(hv_load *l, const hv_special_opts *o, anvil_error *err) {
    static const char *const defaults[] = { "bos", "eos", "unk", "sep", "pad", "cls", "mask" };
    sv s;
    memset(&s, 0, sizeof s);
    s.l = l;
    s.o = o;
    s.lower = s.strip = -1;
    const char *const *types = o->types != NULL ? o->types : defaults;
    const size_t n = o->types != NULL ? o->n_types : 7;
    for (size_t i = 0; i < n && i < SV_MAX_TYPES; ++i) s.types[s.n_types++] = types[i];
    int rc = load_all(&s, err);
    if (rc == ANVIL_OK) rc = emit(&s, err);
    anvil__json_free(s.chat_owned);
    free(s.chat_text);
    return rc;
}

int hv_llama_finish(hv_load *l, const char *kind, anvil_error *err) {
    anvil__hf_vocab *v = l->v;
    v->kind = kind;
    v->pre = "default";
    int rc = hv_set_str(v, "tokenizer.ggml.model", "llama", 5, err);
    if (rc == ANVIL_OK) rc = hv_set_str(v, "tokenizer.ggml.pre", "default", 7, err);
    if (rc == ANVIL_OK)
        rc = hv_set_array(v, "tokenizer.ggml.tokens", ANVIL_GGUF_TYPE_STRING, v->tokens, v->n_tokens, err);
    if (rc == ANVIL_OK)
        rc = hv_set_array(v, "tokenizer.ggml.scores", ANVIL_GGUF_TYPE_F32, v->scores, v->n_tokens, err);
    if (rc == ANVIL_OK)
        rc = hv_set_array(v, "tokenizer.ggml.token_type", ANVIL_GGUF_TYPE_I32, v->types, v->n_tokens, err);
    if (rc != ANVIL_OK) return rc;
    hv_special_opts o = { .has_n_vocab = 1, .n_vocab = v->n_tokens };
    return hv_special_vocab(l, &o, err);
}
