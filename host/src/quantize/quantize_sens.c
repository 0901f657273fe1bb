/* SPDX-License-Identifier: MIT */
/*
 * A sensitivity file (docs/SENSITIVITY.md), read as hostile input, and its
 * lookups for the target optimizer (quantize_target.c).
 *
 * Contract:
 *  - The document is strict JSON (base/json_tree.c): an object with
 *    "format": "anvil-sensitivity", "version": 1, 2 or 3, "chunks" and "ctx"
 *    (integers 1 .. 2^20), and "tensors": an array of 1 .. 2^20 objects,
 *    each "name" (1-255 bytes, unique), "shape" (1-4 integers 1 .. 2^40),
 *    "ref" (a type name the context knows is checked at use), "kld" (a
 *    finite number >= 0); version 2 adds to each "low": an array of 1 ..
 *    QZ_SENS_MAX_LOW objects {"ref": a type name, "kld": finite, >= 0},
 *    the low-bit reference points; version 3 adds to each, optionally,
 *    "err": {"key": 16 lowercase hex digits, "types": [1 .. QZ_SENS_MAX_ERR
 *    unique type names], "relerr": [as many finite numbers >= 0]}, the
 *    candidates' relative errors --measure measured (used only where the
 *    key matches the plan's inputs, quantize_target.c). Other members are
 *    informational and ignored (a version 1 file's "low" too).
 *  - Every error says which member of which entry is wrong and what is
 *    expected; nothing is kept from a refused file.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "quantize_internal.h"

#define SENS_MAX_TENSORS (1u << 20)

static int get_int(const anvil_json_value *j, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   anvil_error *err) {
    const anvil_json_value *v = anvil__json_get(j, key);
    if (v == NULL || anvil__json_i64(v, out) != 0 || *out < lo || *out > hi) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "sensitivity file: \"%s\" must be an integer in %lld .. %lld: measure again with "
                                "anvil quantize --measure",
                                key, (long long)lo, (long long)hi);
    }
    return ANVIL_OK;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(((const qz_sens_entry *)a)->name, ((const qz_sens_entry *)b)->name);
}

static int parse_kld(const anvil_json_value *e, const char *key, const char *name, double *out, anvil_error *err) {
    const anvil_json_value *kv = e->kind == ANVIL_JSON_OBJECT_BEGIN ? anvil__json_get(e, key) : NULL;
    const double kld = anvil__json_is_number(kv) ? anvil__json_f64(kv) : NAN;
    if (!isfinite(kld) || !(kld >= 0.0)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "sensitivity file: tensor '%s': %s must be a finite number >= 0",
                                name, key);
    }
    *out = kld;
    return ANVIL_OK;
}

static int parse_type(const anvil_json_value *e, const char *key, const char *name, char *out, size_t size,
                      anvil_error *err) {
    const char *ref = e->kind == ANVIL_JSON_OBJECT_BEGIN ? anvil__json_str(anvil__json_get(e, key)) : NULL;
    if (ref == NULL || ref[0] == '\0' || strlen(ref) >= size) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "sensitivity file: tensor '%s': %s must be a type name", name,
                                key);
    }
    memcpy(out, ref, strlen(ref) + 1);
    return ANVIL_OK;
}

/* Version 3's optional "err": {"key": 16 hex digits, "types": [names],
 * "relerr": [numbers]}, the two arrays of the same length 1 ..
 * QZ_SENS_MAX_ERR, the names unique. */
static int parse_err(const anvil_json_value *ev, qz_sens_entry *out, anvil_error *err) {
    const char *key = ev->kind == ANVIL_JSON_OBJECT_BEGIN ? anvil__json_str(anvil__json_get(ev, "key")) : NULL;
    const anvil_json_value *ty = ev->kind == ANVIL_JSON_OBJECT_BEGIN ? anvil__json_get(ev, "types") : NULL;
    const anvil_json_value *re = ev->kind == ANVIL_JSON_OBJECT_BEGIN ? anvil__json_get(ev, "relerr") : NULL;
    uint64_t k = 0;
    int ok = key != NULL && strlen(key) == 16;
    for (size_t i = 0; ok && i < 16; ++i) {
        const char c = key[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        ok = d >= 0;
        k = (k << 4) | (uint64_t)(d >= 0 ? d : 0);
    }
    ok = ok && ty != NULL && re != NULL && ty->kind == ANVIL_JSON_ARRAY_BEGIN && re->kind == ANVIL_JSON_ARRAY_BEGIN &&
         ty->n_items >= 1 && ty->n_items <= QZ_SENS_MAX_ERR && re->n_items == ty->n_items;
    if (!ok) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "sensitivity file: tensor '%s': err must be {\"key\": 16 lowercase hex digits, "
                                "\"types\": [1 .. %d type names], \"relerr\": [as many numbers]} (version 3)",
                                out->name, QZ_SENS_MAX_ERR);
    }
    out->err = calloc(ty->n_items, sizeof *out->err);
    if (out->err == NULL) return anvil__nomem(err);
    out->err_key = k;
    for (size_t i = 0; i < ty->n_items; ++i) {
        const char *tn = anvil__json_str(ty->items[i]);
        const double v = anvil__json_is_number(re->items[i]) ? anvil__json_f64(re->items[i]) : NAN;
        if (tn == NULL || tn[0] == '\0' || strlen(tn) >= sizeof out->err[i].type || !isfinite(v) || !(v >= 0.0)) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "sensitivity file: tensor '%s': err.types[%zu] must be a type name and "
                                    "err.relerr[%zu] a finite number >= 0",
                                    out->name, i, i);
        }
        for (size_t j = 0; j < i; ++j) {
            if (strcmp(out->err[j].type, tn) == 0) {
                return anvil__error_set(err, ANVIL_E_FORMAT,
                                        "sensitivity file: tensor '%s': err names type '%s' twice", out->name, tn);
            }
        }
        memcpy(out->err[i].type, tn, strlen(tn) + 1);
        out->err[i].relerr = v;
        out->n_err = i + 1;
    }
    return ANVIL_OK;
}

static int parse_entry(const anvil_json_value *e, size_t i, int version, qz_sens_entry *out, anvil_error *err) {
    if (e->kind != ANVIL_JSON_OBJECT_BEGIN) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "sensitivity file: tensors[%zu] is not an object", i);
    }
    const char *name = anvil__json_str(anvil__json_get(e, "name"));
    if (name == NULL || name[0] == '\0' || strlen(name) >= sizeof out->name) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "sensitivity file: tensors[%zu].name must be a string of 1-%zu "
                                "bytes",
                                i, sizeof out->name - 1);
    }
    memcpy(out->name, name, strlen(name) + 1);
    const anvil_json_value *sh = anvil__json_get(e, "shape");
    if (sh == NULL || sh->kind != ANVIL_JSON_ARRAY_BEGIN || sh->n_items < 1 || sh->n_items > 4) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "sensitivity file: tensor '%s': shape must be 1-4 integers",
                                out->name);
    }
    for (size_t k = 0; k < 4; ++k) out->ne[k] = 1;
    for (size_t k = 0; k < sh->n_items; ++k) {
        int64_t v = 0;
        if (anvil__json_i64(sh->items[k], &v) != 0 || v < 1 || v > ((int64_t)1 << 40)) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "sensitivity file: tensor '%s': shape[%zu] must be an integer 1 .. 2^40",
                                    out->name, k);
        }
        out->ne[k] = (uint64_t)v;
    }
    int rc = parse_type(e, "ref", out->name, out->ref, sizeof out->ref, err);
    if (rc == ANVIL_OK) rc = parse_kld(e, "kld", out->name, &out->kld, err);
    if (rc != ANVIL_OK || version < 2) return rc;
    const anvil_json_value *lo = anvil__json_get(e, "low");
    if (lo == NULL || lo->kind != ANVIL_JSON_ARRAY_BEGIN || lo->n_items < 1 || lo->n_items > QZ_SENS_MAX_LOW) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "sensitivity file: tensor '%s': low must be an array of 1 .. %d {\"ref\", \"kld\"} "
                                "objects (version 2)",
                                out->name, QZ_SENS_MAX_LOW);
    }
    for (size_t k = 0; rc == ANVIL_OK && k < lo->n_items; ++k) {
        rc = parse_type(lo->items[k], "ref", out->name, out->low_ref[k], sizeof out->low_ref[k], err);
        if (rc == ANVIL_OK) rc = parse_kld(lo->items[k], "kld", out->name, &out->low_kld[k], err);
    }
    out->n_low = lo->n_items;
    if (rc != ANVIL_OK || version < 3) return rc;
    const anvil_json_value *ev = anvil__json_get(e, "err");
    return ev == NULL ? ANVIL_OK : parse_err(ev, out, err);
}

ANVIL_API int anvil_quantize_sens_parse(anvil_quantize_sens **out, const void *data, size_t len, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || (data == NULL && len > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_quantize_sens_parse: NULL argument");
    }
    *out = NULL;
    anvil_json_value *root = NULL;
    int rc = anvil__json_tree_parse(data, len, "sensitivity file", &root, err);
    if (rc != ANVIL_OK) return rc;
    anvil_quantize_sens *s = calloc(1, sizeof *s);
    if (s == NULL) rc = anvil__nomem(err);
    const char *fmt = rc == ANVIL_OK ? anvil__json_str(anvil__json_get(root, "format")) : NULL;
    if (rc == ANVIL_OK &&
        (root->kind != ANVIL_JSON_OBJECT_BEGIN || fmt == NULL || strcmp(fmt, "anvil-sensitivity"))) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT,
                              "not a sensitivity file (no \"format\": \"anvil-sensitivity\"): make one with anvil "
                              "quantize --measure");
    }
    int64_t v = 0;
    if (rc == ANVIL_OK) rc = get_int(root, "version", 1, 3, &v, err);
    if (rc == ANVIL_OK) s->version = (int)v;
    if (rc == ANVIL_OK) rc = get_int(root, "chunks", 1, 1 << 20, &v, err);
    if (rc == ANVIL_OK) rc = get_int(root, "ctx", 2, 1 << 20, &v, err);
    const anvil_json_value *ts = rc == ANVIL_OK ? anvil__json_get(root, "tensors") : NULL;
    if (rc == ANVIL_OK &&
        (ts == NULL || ts->kind != ANVIL_JSON_ARRAY_BEGIN || ts->n_items == 0 || ts->n_items > SENS_MAX_TENSORS)) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT,
                              "sensitivity file: \"tensors\" must be an array of 1 .. %u entries", SENS_MAX_TENSORS);
    }
    if (rc == ANVIL_OK) {
        s->e = calloc(ts->n_items, sizeof *s->e);
        if (s->e == NULL) rc = anvil__nomem(err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < ts->n_items; ++i) {
        s->n = i + 1; /* freed from here on */
        rc = parse_entry(ts->items[i], i, s->version, &s->e[i], err);
    }
    if (rc == ANVIL_OK) {
        qsort(s->e, s->n, sizeof *s->e, name_cmp);
        for (size_t i = 1; rc == ANVIL_OK && i < s->n; ++i) {
            if (strcmp(s->e[i - 1].name, s->e[i].name) == 0) {
                rc = anvil__error_set(err, ANVIL_E_FORMAT, "sensitivity file: tensor '%s' is listed twice",
                                      s->e[i].name);
            }
        }
    }
    anvil__json_free(root);
    if (rc != ANVIL_OK) {
        anvil_quantize_sens_free(s);
        return rc;
    }
    *out = s;
    return ANVIL_OK;
}

ANVIL_API void anvil_quantize_sens_free(anvil_quantize_sens *s) {
    if (s == NULL) return;
    for (size_t i = 0; s->e != NULL && i < s->n; ++i) free(s->e[i].err);
    free(s->e);
    free(s);
}

ANVIL_API size_t anvil_quantize_sens_count(const anvil_quantize_sens *s) { return s != NULL ? s->n : 0; }

ANVIL_API int anvil_quantize_sens_version(const anvil_quantize_sens *s) { return s != NULL ? s->version : 0; }

const qz_sens_entry *qz_sens_find(const anvil_quantize_sens *s, const char *name) {
    if (s == NULL || s->n == 0) return NULL;
    qz_sens_entry key;
    if (strlen(name) >= sizeof key.name) return NULL;
    memcpy(key.name, name, strlen(name) + 1);
    return bsearch(&key, s->e, s->n, sizeof *s->e, name_cmp);
}

int qz_sens_check(const anvil_quantize_sens *s, const anvil_gguf *src, anvil_error *err) {
    for (size_t i = 0; i < s->n; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_find_tensor(src, s->e[i].name);
        if (t == NULL) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "sensitivity file: tensor '%s' is not in this model: the file was measured on "
                                    "another model; measure this one with anvil quantize --measure",
                                    s->e[i].name);
        }
        for (int k = 0; k < 4; ++k) {
            if (t->ne[k] != s->e[i].ne[k]) {
                return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                        "sensitivity file: tensor '%s' has another shape in this model: the file "
                                        "was measured on another model; measure this one with anvil quantize "
                                        "--measure",
                                        s->e[i].name);
            }
        }
    }
    return ANVIL_OK;
}
