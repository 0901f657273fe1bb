/* SPDX-License-Identifier: MIT */
/*
 * Importance-matrix files as llama-imatrix writes and reads them:
 *  - GGUF (save_imatrix): KVs general.type = "imatrix", imatrix.datasets
 *    (string array), imatrix.chunk_count, imatrix.chunk_size (u32), then per
 *    entry in name order "<name>.in_sum2" (F32 [n_per, n_mat]) and
 *    "<name>.counts" (F32 [1, n_mat]); every entry, even one never seen.
 *  - .dat (save_imatrix_legacy): i32 n_entries; per entry with a non-zero
 *    count, in name order: i32 name length, the name, i32 ncall (the
 *    largest count / chunk size, rounded up), i32 n_values, f32 values
 *    (sum / count * ncall; an expert never seen: ncall); then i32 chunk
 *    count, i32 length and the last dataset's name.
 *  - Loading (load_imatrix): GGUF raw; .dat values and ncall times the
 *    chunk size given. Every length is checked against what is left; a
 *    malformed file is refused naming the entry.
 * Writes go through the atomic writers (a temp file renamed into place).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "error.h"
#include "file_input.h"
#include "mdl_imat.h"

static int save_gguf(const anvil_imat *im, const char *path, anvil_error *err) {
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_writer_new(&w, NULL, err);
    if (rc != ANVIL_OK) return rc;
    float **bufs = calloc(im->n + 1, sizeof *bufs);
    if (bufs == NULL) rc = anvil__nomem(err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.type", "imatrix", err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_string_array(w, "imatrix.datasets", (const char *const *)im->datasets,
                                                im->n_datasets, err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_count", anvil_imat_chunk_count(im), err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_size", im->chunk_size, err);
    for (size_t i = 0; rc == ANVIL_OK && i < im->n; ++i) {
        const imat_ent *e = &im->e[i];
        char name[512];
        const uint64_t ne_s[2] = { e->n_per, e->n_mat }, ne_c[2] = { 1, e->n_mat };
        bufs[i] = malloc(e->n_mat * sizeof(float));
        if (bufs[i] == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        for (uint32_t j = 0; j < e->n_mat; ++j) bufs[i][j] = (float)e->counts[j];
        snprintf(name, sizeof name, "%s.in_sum2", e->name);
        rc = anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne_s, e->sums,
                                          (uint64_t)e->n_per * e->n_mat * sizeof(float), err);
        snprintf(name, sizeof name, "%s.counts", e->name);
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne_c, bufs[i], e->n_mat * sizeof(float),
                                              err);
        }
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(w, path, err);
    anvil_gguf_writer_free(w);
    for (size_t i = 0; bufs != NULL && i < im->n; ++i) free(bufs[i]);
    free(bufs);
    return rc;
}

typedef struct obuf {
    unsigned char *p;
    size_t n, cap;
    int failed;
} obuf;

static void put(obuf *b, const void *v, size_t n) {
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

static void put_i32(obuf *b, int32_t v) { put(b, &v, 4); }

static int64_t max_count(const imat_ent *e) {
    int64_t m = 0;
    for (uint32_t j = 0; j < e->n_mat; ++j) m = e->counts[j] > m ? e->counts[j] : m;
    return m;
}

static void dat_entry(obuf *b, const imat_ent *e, uint32_t chunk) {
    const int32_t ncall = (int32_t)((max_count(e) + chunk - 1) / chunk);
    put_i32(b, (int32_t)strlen(e->name));
    put(b, e->name, strlen(e->name));
    put_i32(b, ncall);
    put_i32(b, (int32_t)((size_t)e->n_per * e->n_mat));
    for (uint32_t j = 0; j < e->n_mat; ++j) {
        for (uint32_t k = 0; k < e->n_per; ++k) {
            float count = (float)e->counts[j], value = e->sums[(size_t)j * e->n_per + k];
            if (count == 0.0f) value = count = 1.0f;
            const float v = value / count * (float)ncall;
            put(b, &v, 4);
        }
    }
}

static int save_dat(const anvil_imat *im, const char *path, anvil_error *err) {
    const uint32_t chunk = im->chunk_size ? im->chunk_size : 512;
    obuf b = { 0 };
    int32_t n_entries = 0;
    for (size_t i = 0; i < im->n; ++i) n_entries += max_count(&im->e[i]) > 0;
    put_i32(&b, n_entries);
    for (size_t i = 0; i < im->n; ++i) {
        const imat_ent *e = &im->e[i];
        if (max_count(e) == 0) continue;
        if ((size_t)e->n_per * e->n_mat > INT32_MAX || strlen(e->name) > INT32_MAX ||
            (max_count(e) + chunk - 1) / chunk > INT32_MAX) {
            free(b.p);
            return anvil__error_set(err, ANVIL_E_OVERFLOW, "%s does not fit the .dat format's 32-bit fields",
                                    e->name);
        }
        dat_entry(&b, e, chunk);
    }
    put_i32(&b, (int32_t)anvil_imat_chunk_count(im));
    const char *ds = im->n_datasets ? im->datasets[im->n_datasets - 1] : "";
    put_i32(&b, (int32_t)strlen(ds));
    put(&b, ds, strlen(ds));
    if (b.failed) {
        free(b.p);
        return anvil__nomem(err);
    }
    int rc = anvil_file_write_atomic(path, b.p, b.n, err);
    free(b.p);
    return rc;
}

ANVIL_API int anvil_imat_save(const anvil_imat *im, const char *path, int format, anvil_error *err) {
    anvil__error_clear(err);
    if (im == NULL || path == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_imat_save: NULL");
    if (im->n == 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "%s: the importance matrix is empty; nothing written",
                                path);
    }
    const int rc = format == ANVIL_IMAT_DAT ? save_dat(im, path, err) : save_gguf(im, path, err);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "%s", path);
    return rc;
}
