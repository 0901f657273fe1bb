/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab_spm: a SentencePiece tokenizer.model as convert_hf_to_gguf.py's
 * _create_vocab_sentencepiece and _set_vocab_sentencepiece write it.
 *
 * The file is a protobuf ModelProto; what is read: field 1 (repeated
 * SentencePiece: 1 piece string, 2 score float, 3 type enum, default
 * NORMAL) and field 2 (TrainerSpec: 3 model_type, checked to be one
 * SentencePiece knows). Every other field is skipped by its wire type. The
 * reader is checked: a varint longer than 10 bytes, a length past its
 * enclosing message, a group or an unknown wire type is an error naming the
 * file and the byte offset.
 */
#include "hf_vocab_internal.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct pb {
    const uint8_t *p;
    size_t end; /* exclusive bound of the current message */
    size_t pos;
    const char *path;
} pb;

static int pb_bad(const pb *r, anvil_error *err, const char *what) {
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s: not a SentencePiece model: %s at byte %zu; re-download the file", r->path, what,
                            r->pos);
}

static int pb_varint(pb *r, uint64_t *out, anvil_error *err) {
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
        if (r->pos >= r->end) return pb_bad(r, err, "truncated varint");
        const uint8_t b = r->p[r->pos++];
        if (i == 9 && b > 1) return pb_bad(r, err, "varint over 64 bits");
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            *out = v;
            return ANVIL_OK;
        }
    }
    return pb_bad(r, err, "varint over 10 bytes");
}

/* Read a field's value: wire type 2 gives [*at, *at + *len); others are
 * consumed (fixed32 value in *u32, varint in *u). */
typedef struct pb_field {
    uint64_t num;
    uint32_t wire;
    uint64_t u;
    uint32_t u32;
    size_t at, len;
} pb_field;

static int pb_next(pb *r, pb_field *f, anvil_error *err) {
    uint64_t key = 0;
    int rc = pb_varint(r, &key, err);
    if (rc != ANVIL_OK) return rc;
    f->num = key >> 3;
    f->wire = (uint32_t)(key & 7);
    switch (f->wire) {
    case 0: return pb_varint(r, &f->u, err);
    case 1:
        if (r->end - r->pos < 8) return pb_bad(r, err, "truncated 64-bit field");
        r->pos += 8;
        return ANVIL_OK;
    case 5:
        if (r->end - r->pos < 4) return pb_bad(r, err, "truncated 32-bit field");
        f->u32 = (uint32_t)r->p[r->pos] | (uint32_t)r->p[r->pos + 1] << 8 | (uint32_t)r->p[r->pos + 2] << 16 |
                 (uint32_t)r->p[r->pos + 3] << 24;
        r->pos += 4;
        return ANVIL_OK;
    case 2:
        rc = pb_varint(r, &f->u, err);
        if (rc != ANVIL_OK) return rc;
        if (f->u > r->end - r->pos) return pb_bad(r, err, "a field runs past the end of its message");
        f->at = r->pos;
        f->len = (size_t)f->u;
        r->pos += f->len;
        return ANVIL_OK;
    default: return pb_bad(r, err, "unsupported protobuf wire type (group or invalid)");
    }
}

typedef hv_spm_piece spm_piece;

static int read_piece(const pb *outer, const pb_field *f, spm_piece *out, anvil_error *err) {
    pb r = { outer->p, f->at + f->len, f->at, outer->path };
    memset(out, 0, sizeof *out);
    out->type = HV_NORMAL;
    int has_piece = 0;
    while (r.pos < r.end) {
        pb_field g;
        const int rc = pb_next(&r, &g, err);
        if (rc != ANVIL_OK) return rc;
        if (g.num == 1 && g.wire == 2) {
            out->text = (const char *)r.p + g.at;
            out->len = g.len;
            has_piece = 1;
        } else if (g.num == 2 && g.wire == 5) {
            memcpy(&out->score, &g.u32, sizeof out->score);
        } else if (g.num == 3 && g.wire == 0) {
            if (g.u < 1 || g.u > 6) return pb_bad(&r, err, "unknown piece type");
            out->type = (int)g.u;
        }
    }
    if (!has_piece) return pb_bad(&r, err, "a piece without its text");
    if (anvil__utf8_valid_prefix((const unsigned char *)out->text, out->len) != out->len) {
        return pb_bad(&r, err, "a piece that is not valid UTF-8");
    }
    return ANVIL_OK;
}

static int check_trainer(const pb *outer, const pb_field *f, anvil_error *err) {
    pb r = { outer->p, f->at + f->len, f->at, outer->path };
    while (r.pos < r.end) {
        pb_field g;
        const int rc = pb_next(&r, &g, err);
        if (rc != ANVIL_OK) return rc;
        if (g.num == 3 && g.wire == 0 && (g.u < 1 || g.u > 4)) {
            return pb_bad(&r, err, "unknown model_type (not UNIGRAM, BPE, WORD or CHAR)");
        }
    }
    return ANVIL_OK;
}

/* Every piece of the model, in id order. */
static int read_model(const char *buf, size_t len, const char *path, spm_piece **out, size_t *n, anvil_error *err) {
    pb r = { (const uint8_t *)buf, len, 0, path };
    size_t cap = 0;
    int has_trainer = 0;
    *out = NULL;
    *n = 0;
    while (r.pos < r.end) {
        pb_field f;
        int rc = pb_next(&r, &f, err);
        if (rc == ANVIL_OK && f.num == 2 && f.wire == 2) {
            rc = check_trainer(&r, &f, err);
            has_trainer = 1;
        }
        if (rc == ANVIL_OK && f.num == 1 && f.wire == 2) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 1024;
                spm_piece *np = realloc(*out, cap * sizeof *np);
                if (np == NULL) rc = anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory", path);
                else *out = np;
            }
            if (rc == ANVIL_OK) rc = read_piece(&r, &f, &(*out)[*n], err);
            if (rc == ANVIL_OK) (*n)++;
        }
        if (rc != ANVIL_OK) return rc;
    }
    if (*n == 0) return anvil__error_set(err, ANVIL_E_FORMAT, "%s: a SentencePiece model without pieces", path);
    /* The trainer spec is written after the pieces: without it the file
     * most likely ends early, at a piece boundary. */
    if (!has_trainer) {
        return anvil__error_set(err, ANVIL_E_TRUNCATED,
                                "%s: no trainer_spec after the %zu pieces: the file looks truncated; "
                                "re-download it",
                                path, *n);
    }
    return ANVIL_OK;
}

/* The converter's vocab_size: hparams' vocab_size_per_layer_input or
 * vocab_size (the first present), or the model's piece count when that is
 * null or 0. */
static int spm_vocab_size(const hv_load *l, size_t n_pieces, uint64_t *out, anvil_error *err) {
    const anvil_json_value *j = hv_hparam(l, "vocab_size_per_layer_input");
    if (j == NULL) j = hv_hparam(l, "vocab_size");
    *out = n_pieces;
    if (!hf_truthy(j)) return ANVIL_OK;
    int64_t vs = 0;
    if (anvil__json_i64(j, &vs) != 0 || vs < 0 || vs > INT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: vocab_size must be an integer in 0..2^31-1",
                                l->config_path);
    }
    *out = (uint64_t)vs;
    return ANVIL_OK;
}

static int spm_alloc(anvil__hf_vocab *v, uint64_t n, anvil_error *err) {
    const int rc = hv_alloc_tokens(v, n, 1, err);
    if (rc != ANVIL_OK) return rc;
    for (uint64_t i = 0; i < n; ++i) {
        char *t = hv_printf(&v->arena, "[PAD%llu]", (unsigned long long)i);
        if (t == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
        v->tokens[i].ptr = t;
        v->tokens[i].len = strlen(t);
        v->scores[i] = -10000.0f;
        v->types[i] = HV_UNUSED;
    }
    return ANVIL_OK;
}

static int spm_type(int piece_type) {
    switch (piece_type) {
    case HV_UNKNOWN:
    case HV_CONTROL:
    case HV_UNUSED:
    case HV_BYTE: return piece_type;
    default: return HV_NORMAL; /* USER_DEFINED pieces read as NORMAL, as the converter asks */
    }
}

/* added_tokens.json: {"text": id}, each id below vocab_size made USER_DEFINED. */
static int spm_added_json(hv_load *l, anvil_error *err) {
    char *path = hf_path_join(l->dir, "added_tokens.json");
    if (path == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    anvil_json_value *j = NULL;
    int rc = ANVIL_OK;
    if (hv_is_file(path)) rc = anvil__json_tree_load(path, &j, err);
    if (rc == ANVIL_OK && j != NULL && j->kind != ANVIL_JSON_OBJECT_BEGIN) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: expected an object {\"token\": id}", path);
    }
    for (size_t i = 0; rc == ANVIL_OK && j != NULL && i < j->n_items; ++i) {
        int64_t id = 0;
        if (anvil__json_i64(j->items[i], &id) != 0 || id < 0) {
            char q[256];
            const char *k = j->items[i]->key;
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: the id of %s is not a non-negative integer", path,
                                  hv_quote(q, sizeof q, k, strlen(k)));
        } else if ((uint64_t)id < l->v->n_tokens) {
            rc = hv_put_token(l->v, (uint64_t)id, j->items[i]->key, strlen(j->items[i]->key), -1000.0f,
                              HV_USER_DEFINED, 0, err);
        }
    }
    anvil__json_free(j);
    free(path);
    return rc;
}

static int parse_id_key(const char *s, int64_t *out) {
    uint64_t v = 0;
    if (*s == '\0') return -1;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > INT32_MAX) return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* tokenizer_config.json's added_tokens_decoder: {"id": {"content": ..., "special": ...}}. */
static int spm_added_decoder(hv_load *l, anvil_error *err) {
    const anvil_json_value *d = l->tcfg != NULL ? anvil__json_get(l->tcfg, "added_tokens_decoder") : NULL;
    if (d == NULL || d->kind != ANVIL_JSON_OBJECT_BEGIN) return ANVIL_OK;
    for (size_t i = 0; i < d->n_items; ++i) {
        const anvil_json_value *e = d->items[i];
        char q[256];
        int64_t id = 0;
        const char *content = anvil__json_str(anvil__json_get(e, "content"));
        if (parse_id_key(e->key, &id) != 0 || content == NULL) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: added_tokens_decoder[%s] needs a non-negative integer id "
                                    "and a string \"content\"",
                                    l->tcfg_path, hv_quote(q, sizeof q, e->key, strlen(e->key)));
        }
        if ((uint64_t)id >= l->v->n_tokens) continue;
        size_t len = anvil__json_get(e, "content")->len;
        int type = HV_CONTROL;
        char *t = hv_dup(&l->v->arena, content, len);
        if (t == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
        if (!hf_truthy(anvil__json_get(e, "special")) && !hv_looks_special(content, len)) {
            len = hv_unmark_spaces(t, len);
            type = HV_USER_DEFINED;
        }
        l->v->tokens[id].ptr = t;
        l->v->tokens[id].len = len;
        l->v->scores[id] = -1000.0f;
        l->v->types[id] = type;
    }
    return ANVIL_OK;
}

static int spm_build(hv_load *l, const spm_piece *pcs, size_t n, anvil_error *err) {
    uint64_t vs = 0;
    int rc = spm_vocab_size(l, n, &vs, err);
    if (rc == ANVIL_OK) rc = spm_alloc(l->v, vs, err);
    for (size_t i = 0; rc == ANVIL_OK && i < n && i < vs; ++i) {
        rc = hv_put_token(l->v, i, pcs[i].text, pcs[i].len, pcs[i].score, spm_type(pcs[i].type), 0, err);
    }
    if (rc == ANVIL_OK) rc = spm_added_json(l, err);
    if (rc == ANVIL_OK) rc = spm_added_decoder(l, err);
    return rc;
}

int hv_spm_vocab(hv_load *l, anvil_error *err) {
    char *path = hf_path_join(l->dir, "tokenizer.model");
    char *buf = NULL;
    size_t len = 0, n = 0;
    spm_piece *pcs = NULL;
    int rc = path == NULL ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory")
                          : hv_read_file(path, &buf, &len, err);
    if (rc == ANVIL_OK) rc = read_model(buf, len, path, &pcs, &n, err);
    if (rc == ANVIL_OK) rc = spm_build(l, pcs, n, err);
    free(pcs);
    free(buf);
    free(path);
    if (rc != ANVIL_OK) return rc;
    return hv_llama_finish(l, "spm", err);
}

int hv_spm_read(const char *dir, char **buf, hv_spm_piece **pieces, size_t *n, anvil_error *err) {
    char *path = hf_path_join(dir, "tokenizer.model");
    size_t len = 0;
    *buf = NULL;
    *pieces = NULL;
    *n = 0;
    int rc = path == NULL ? anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory")
                          : hv_read_file(path, buf, &len, err);
    if (rc == ANVIL_OK) rc = read_model(*buf, len, path, pieces, n, err);
    free(path);
    return rc;
}
