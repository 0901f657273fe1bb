/* SPDX-License-Identifier: MIT */
/*
 * The importance-matrix accumulator (anvil/imat.h): entries kept sorted by
 * name (binary search), raw f32 sums added row by row in the order given,
 * int64 counts; merging as llama-imatrix's load_imatrix combines files
 * (the same number of values; a one-count entry's count broadcast to the
 * other's experts; any other difference refused). Collection is in
 * mdl_imat_collect.c, the file formats in mdl_imat_io.c.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "mdl_imat.h"

ANVIL_API int anvil_imat_new(anvil_imat **out, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_imat_new: NULL argument");
    *out = calloc(1, sizeof **out);
    if (*out == NULL) return anvil__nomem(err);
    (*out)->chunk_size = 512;
    return ANVIL_OK;
}

ANVIL_API void anvil_imat_free(anvil_imat *im) {
    if (im == NULL) return;
    for (size_t i = 0; i < im->n; ++i) {
        free(im->e[i].name);
        free(im->e[i].sums);
        free(im->e[i].counts);
    }
    free(im->e);
    for (size_t i = 0; i < im->n_datasets; ++i) free(im->datasets[i]);
    free(im->datasets);
    free(im);
}

ANVIL_API size_t anvil_imat_count(const anvil_imat *im) { return im ? im->n : 0; }

ANVIL_API int anvil_imat_entry_at(const anvil_imat *im, size_t i, anvil_imat_entry *out) {
    if (im == NULL || out == NULL || i >= im->n) return ANVIL_E_INVALID_ARG;
    const imat_ent *e = &im->e[i];
    *out = (anvil_imat_entry){
        .name = e->name, .sums = e->sums, .counts = e->counts, .n_per = e->n_per, .n_mat = e->n_mat
    };
    return ANVIL_OK;
}

ANVIL_API const char *anvil_imat_dataset_at(const anvil_imat *im, size_t i) {
    return im != NULL && i < im->n_datasets ? im->datasets[i] : NULL;
}

ANVIL_API int anvil_imat_add_dataset(anvil_imat *im, const char *name, anvil_error *err) {
    char **d = realloc(im->datasets, (im->n_datasets + 1) * sizeof *d);
    if (d == NULL) return anvil__nomem(err);
    im->datasets = d;
    d[im->n_datasets] = strdup(name);
    if (d[im->n_datasets] == NULL) return anvil__nomem(err);
    im->n_datasets++;
    return ANVIL_OK;
}

ANVIL_API uint32_t anvil_imat_chunk_size(const anvil_imat *im) { return im ? im->chunk_size : 0; }
ANVIL_API void anvil_imat_set_chunk_size(anvil_imat *im, uint32_t chunk_size) {
    if (im != NULL && chunk_size > 0) im->chunk_size = chunk_size;
}

ANVIL_API uint32_t anvil_imat_chunk_count(const anvil_imat *im) {
    if (im == NULL || im->chunk_size == 0) return 0;
    int64_t max = 0;
    for (size_t i = 0; i < im->n; ++i) {
        for (uint32_t j = 0; j < im->e[i].n_mat; ++j) max = im->e[i].counts[j] > max ? im->e[i].counts[j] : max;
    }
    const int64_t c = max / im->chunk_size;
    return c > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}

/* Index of name, or -(insertion point) - 1. */
static ptrdiff_t search(const anvil_imat *im, const char *name) {
    size_t lo = 0, hi = im->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(im->e[mid].name, name);
        if (c == 0) return (ptrdiff_t)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -(ptrdiff_t)lo - 1;
}

imat_ent *mdl_imat_entry(anvil_imat *im, const char *name, uint32_t n_per, uint32_t n_mat, anvil_error *err) {
    ptrdiff_t at = search(im, name);
    if (at >= 0) {
        imat_ent *e = &im->e[at];
        const uint64_t have = (uint64_t)e->n_per * e->n_mat, want = (uint64_t)n_per * n_mat;
        if (have == want && e->n_mat == 1 && n_mat > 1) { /* llama.cpp broadcasts a single count */
            int64_t *c = realloc(e->counts, n_mat * sizeof *c);
            if (c == NULL) {
                anvil__nomem(err);
                return NULL;
            }
            for (uint32_t j = 1; j < n_mat; ++j) c[j] = c[0];
            e->counts = c;
            e->n_per = n_per;
            e->n_mat = n_mat;
        }
        if (have != want || e->n_mat != n_mat) {
            anvil__error_set(err, ANVIL_E_FORMAT,
                             "%s: %u values x %u matrices here, %u x %u before (an importance matrix of another "
                             "model?)",
                             name, n_per, n_mat, e->n_per, e->n_mat);
            return NULL;
        }
        return e;
    }
    if (n_per == 0 || n_mat == 0 || (size_t)n_per > SIZE_MAX / sizeof(float) / n_mat) {
        anvil__error_set(err, ANVIL_E_FORMAT, "%s: %u x %u values is not a matrix shape", name, n_per, n_mat);
        return NULL;
    }
    const size_t pos = (size_t)(-at - 1);
    if (im->n == im->cap) {
        const size_t cap = im->cap ? im->cap * 2 : 64;
        imat_ent *ne = realloc(im->e, cap * sizeof *ne);
        if (ne == NULL) {
            anvil__nomem(err);
            return NULL;
        }
        im->e = ne;
        im->cap = cap;
    }
    imat_ent e = { .name = strdup(name), .n_per = n_per, .n_mat = n_mat };
    e.sums = calloc((size_t)n_per * n_mat, sizeof *e.sums);
    e.counts = calloc(n_mat, sizeof *e.counts);
    if (e.name == NULL || e.sums == NULL || e.counts == NULL) {
        free(e.name);
        free(e.sums);
        free(e.counts);
        anvil__nomem(err);
        return NULL;
    }
    memmove(im->e + pos + 1, im->e + pos, (im->n - pos) * sizeof *im->e);
    im->e[pos] = e;
    im->n++;
    return &im->e[pos];
}

ANVIL_API int anvil_imat_accumulate(anvil_imat *im, const char *name, uint32_t mat, uint32_t n_mat, const float *x,
                                    size_t n_rows, size_t n_cols, anvil_error *err) {
    if (im == NULL || name == NULL || (n_rows > 0 && x == NULL) || mat >= n_mat || n_cols > UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_imat_accumulate: bad argument");
    }
    imat_ent *e = mdl_imat_entry(im, name, (uint32_t)n_cols, n_mat, err);
    if (e == NULL) return err ? err->code : ANVIL_E_FORMAT;
    float *acc = e->sums + (size_t)mat * n_cols;
    for (size_t r = 0; r < n_rows; ++r) {
        const float *xr = x + r * n_cols;
        for (size_t j = 0; j < n_cols; ++j) acc[j] += xr[j] * xr[j];
    }
    e->counts[mat] += (int64_t)n_rows;
    return ANVIL_OK;
}

ANVIL_API int anvil_imat_merge(anvil_imat *dst, const anvil_imat *src, anvil_error *err) {
    anvil__error_clear(err);
    if (dst == NULL || src == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_imat_merge: NULL");
    for (size_t i = 0; i < src->n; ++i) {
        const imat_ent *s = &src->e[i];
        imat_ent *d = mdl_imat_entry(dst, s->name, s->n_per, s->n_mat, err);
        if (d == NULL) return err ? err->code : ANVIL_E_FORMAT;
        for (size_t j = 0; j < (size_t)s->n_per * s->n_mat; ++j) d->sums[j] += s->sums[j];
        for (uint32_t j = 0; j < s->n_mat; ++j) d->counts[j] += s->counts[j];
    }
    for (size_t i = 0; i < src->n_datasets; ++i) {
        int rc = anvil_imat_add_dataset(dst, src->datasets[i], err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}
