/* SPDX-License-Identifier: MIT */
/*
 * Loading an importance matrix raw (anvil_imat_load), as llama-imatrix's
 * load_imatrix does for --in-file and --show-statistics: a GGUF's sums and
 * counts as stored (counts rounded to integers), a legacy .dat's values and
 * ncall times the chunk size. Hostile bytes: every length is checked
 * against what is left before anything is allocated; a GGUF must pair each
 * "<name>.in_sum2" with "<name>.counts", F32, the values a whole multiple of
 * the counts; a .dat with no entries, a name or value count out of range, or
 * a truncated entry is refused naming the entry.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "error.h"
#include "file_input.h"
#include "mdl_imat.h"

typedef struct rd {
    const unsigned char *p;
    size_t left;
} rd;

static int rd_i32(rd *r, int32_t *v) {
    if (r->left < 4) return -1;
    memcpy(v, r->p, 4);
    r->p += 4;
    r->left -= 4;
    return 0;
}

static int dat_entry(anvil_imat *im, rd *r, int32_t i, uint32_t chunk, anvil_error *err) {
    int32_t len = 0, ncall = 0, nval = 0;
    if (rd_i32(r, &len) != 0 || len < 0 || (size_t)len > r->left || len > 4096) {
        return anvil__error_set(err, ANVIL_E_FORMAT, ".dat entry %d: the name length is missing or out of range", i);
    }
    char name[4097];
    memcpy(name, r->p, (size_t)len);
    name[len] = '\0';
    name[strnlen(name, (size_t)len)] = '\0'; /* as std::string of a C string */
    r->p += len;
    r->left -= (size_t)len;
    if (rd_i32(r, &ncall) != 0 || rd_i32(r, &nval) != 0 || nval < 1 || (size_t)nval > r->left / 4) {
        return anvil__error_set(err, ANVIL_E_FORMAT, ".dat entry %d (%s): the value count is missing or out of range",
                                i, name);
    }
    /* a later duplicate replaces an earlier one (std::map's []) */
    imat_ent *e = mdl_imat_entry(im, name, (uint32_t)nval, 1, err);
    if (e == NULL) return err ? err->code : ANVIL_E_FORMAT;
    for (int32_t k = 0; k < nval; ++k) {
        float v;
        memcpy(&v, r->p + 4 * (size_t)k, 4);
        e->sums[k] = v * (float)chunk;
    }
    e->counts[0] = (int64_t)ncall * chunk;
    r->p += 4 * (size_t)nval;
    r->left -= 4 * (size_t)nval;
    return ANVIL_OK;
}

static int load_dat(anvil_imat *im, const unsigned char *data, size_t size, uint32_t chunk, anvil_error *err) {
    rd r = { data, size };
    int32_t n = 0;
    if (rd_i32(&r, &n) != 0 || n < 1) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "neither a GGUF nor a .dat importance matrix with entries (no data)");
    }
    for (int32_t i = 0; i < n; ++i) {
        int rc = dat_entry(im, &r, i, chunk, err);
        if (rc != ANVIL_OK) return rc;
    }
    int32_t calls = 0, len = 0;
    if (rd_i32(&r, &calls) == 0 && rd_i32(&r, &len) == 0 && len > 0 && (size_t)len <= r.left) {
        char *ds = malloc((size_t)len + 1);
        if (ds == NULL) return anvil__nomem(err);
        memcpy(ds, r.p, (size_t)len);
        ds[len] = '\0';
        int rc = anvil_imat_add_dataset(im, ds, err);
        free(ds);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

static int gguf_datasets(anvil_imat *im, const anvil_gguf *g, anvil_error *err) {
    const anvil_gguf_kv *ds = anvil_gguf_find_kv(g, "imatrix.datasets");
    if (ds == NULL || ds->type != ANVIL_GGUF_TYPE_ARRAY || ds->elem_type != ANVIL_GGUF_TYPE_STRING) return ANVIL_OK;
    anvil_gguf_value v;
    anvil_gguf_kv_value(ds, &v);
    for (uint64_t i = 0; i < v.a.count; ++i) {
        anvil_gguf_value s;
        if (anvil_gguf_array_get(&v.a, i, &s) != ANVIL_OK) break;
        char *str = malloc(s.s.len + 1);
        if (str == NULL) return anvil__nomem(err);
        memcpy(str, s.s.ptr, s.s.len);
        str[s.s.len] = '\0';
        int rc = anvil_imat_add_dataset(im, str, err);
        free(str);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

/* The tensor "<stem><suffix>", or NULL. */
static const anvil_gguf_tensor *partner(const anvil_gguf *g, const char *stem, size_t n, const char *suffix) {
    char name[ANVIL_GGUF_MAX_TENSOR_NAME + 64];
    if (n + strlen(suffix) >= sizeof name) return NULL;
    memcpy(name, stem, n);
    strcpy(name + n, suffix);
    return anvil_gguf_find_tensor(g, name);
}

static int gguf_entry(anvil_imat *im, const anvil_gguf *g, const anvil_gguf_tensor *s, size_t stem,
                      anvil_error *err) {
    char name[ANVIL_GGUF_MAX_TENSOR_NAME + 64];
    if (stem >= sizeof name) return ANVIL_OK;
    memcpy(name, s->name, stem);
    name[stem] = '\0';
    const anvil_gguf_tensor *c = partner(g, s->name, stem, ".counts");
    if (c == NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "mismatched sums and counts for %s (no %s.counts)", name, name);
    }
    if (s->type != ANVIL_TYPE_F32 || c->type != ANVIL_TYPE_F32) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "sums and counts for %s must be F32", name);
    }
    if (c->n_elements == 0 || s->n_elements == 0 || s->n_elements % c->n_elements != 0 ||
        s->n_elements / c->n_elements > UINT32_MAX || c->n_elements > UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: %llu sums do not split into %llu matrices", name,
                                (unsigned long long)s->n_elements, (unsigned long long)c->n_elements);
    }
    const uint32_t n_mat = (uint32_t)c->n_elements, n_per = (uint32_t)(s->n_elements / c->n_elements);
    imat_ent *e = mdl_imat_entry(im, name, n_per, n_mat, err);
    if (e == NULL) return err ? err->code : ANVIL_E_FORMAT;
    memcpy(e->sums, s->data, (size_t)s->n_elements * sizeof(float));
    for (uint32_t j = 0; j < n_mat; ++j) {
        float v;
        memcpy(&v, (const unsigned char *)c->data + 4 * (size_t)j, 4);
        if (!isfinite(v) || v < 0.0f || v > 4.0e18f) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: count %u is %g, not a row count", name, j, (double)v);
        }
        e->counts[j] = (int64_t)llroundf(v);
    }
    return ANVIL_OK;
}

static int load_gguf(anvil_imat *im, const anvil_gguf *g, anvil_error *err) {
    const size_t nt = anvil_gguf_tensor_count(g);
    if (nt < 1) return anvil__error_set(err, ANVIL_E_FORMAT, "no data (a GGUF without tensors)");
    int rc = gguf_datasets(im, g, err);
    const anvil_gguf_kv *cs = anvil_gguf_find_kv(g, "imatrix.chunk_size");
    if (cs != NULL && cs->type == ANVIL_GGUF_TYPE_U32) {
        anvil_gguf_value v;
        anvil_gguf_kv_value(cs, &v);
        anvil_imat_set_chunk_size(im, (uint32_t)v.u);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < nt; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        const size_t n = strlen(t->name), m = strlen(".in_sum2");
        if (n > m && memcmp(t->name + n - m, ".in_sum2", m) == 0) {
            rc = gguf_entry(im, g, t, n - m, err);
        } else if (n > 7 && memcmp(t->name + n - 7, ".counts", 7) == 0 &&
                   partner(g, t->name, n - 7, ".in_sum2") == NULL) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "mismatched sums and counts for %.*s (no .in_sum2)",
                                  (int)(n - 7), t->name);
        }
    }
    if (rc == ANVIL_OK && im->n == 0) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "no .in_sum2 / .counts tensors: not an importance matrix");
    }
    return rc;
}

ANVIL_API int anvil_imat_load_buffer(anvil_imat **out, const void *data, size_t size, uint32_t legacy_chunk_size,
                                     int *format, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || (data == NULL && size > 0)) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    anvil_imat *im = NULL;
    int rc = anvil_imat_new(&im, err);
    if (rc != ANVIL_OK) return rc;
    const int is_gguf = size >= 4 && memcmp(data, "GGUF", 4) == 0;
    const uint32_t chunk = legacy_chunk_size ? legacy_chunk_size : 512;
    if (is_gguf) {
        anvil_gguf *g = NULL;
        rc = anvil_gguf_open_buffer(&g, data, size, NULL, err);
        if (rc == ANVIL_OK) rc = load_gguf(im, g, err);
        anvil_gguf_close(g);
    } else {
        rc = load_dat(im, data, size, chunk, err);
        anvil_imat_set_chunk_size(im, chunk);
    }
    if (rc != ANVIL_OK) {
        anvil_imat_free(im);
        return rc;
    }
    if (format != NULL) *format = is_gguf ? ANVIL_IMAT_GGUF : ANVIL_IMAT_DAT;
    *out = im;
    return ANVIL_OK;
}

ANVIL_API int anvil_imat_load(anvil_imat **out, const char *path, uint32_t legacy_chunk_size, int *format,
                              anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || path == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    char *data = NULL;
    size_t len = 0;
    int rc = file_input_read(path, (size_t)1 << 32, "an importance matrix", &data, &len, err);
    if (rc == ANVIL_OK) rc = anvil_imat_load_buffer(out, data, len, legacy_chunk_size, format, err);
    free(data);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "importance matrix %s", path);
    return rc;
}
