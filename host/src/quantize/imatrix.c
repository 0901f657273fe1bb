/* SPDX-License-Identifier: MIT */
/*
 * Importance matrices, as llama-quantize reads them (llama.cpp's
 * common/imatrix-loader and tools/quantize/quantize.cpp's load_imatrix): the GGUF format and the
 * legacy .dat, normalised to one weight per input column (per expert).
 *
 * Both readers take hostile bytes: every length and count is checked
 * against what is left before anything is allocated, and a failure names
 * the entry and what to do. Where llama.cpp reads a malformed file in a
 * defined way (a short trailing chunk count, a count that does not divide
 * the sums) the same values come out; where it would crash (a negative name
 * length, no counts at all) the file is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/quantize.h"
#include "error.h"
#include "file_input.h"

typedef struct im_entry {
    char *name;
    float *values;
    size_t n;
    /* GGUF: per-expert counts; legacy: ncall (one value). Kept until normalised. */
    double *counts;
    size_t n_counts;
    anvil_imatrix_entry view; /* what the API hands out (set once loaded) */
} im_entry;

struct anvil_imatrix {
    im_entry *e;
    size_t n, cap;
    char **datasets;
    size_t n_datasets;
    int32_t chunk_count;
    int is_legacy;
    int has_metadata;
};

ANVIL_API void anvil_imatrix_free(anvil_imatrix *im) {
    if (im == NULL) return;
    for (size_t i = 0; i < im->n; ++i) {
        free(im->e[i].name);
        free(im->e[i].values);
        free(im->e[i].counts);
    }
    free(im->e);
    for (size_t i = 0; i < im->n_datasets; ++i) free(im->datasets[i]);
    free(im->datasets);
    free(im);
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const im_entry *)a)->name, ((const im_entry *)b)->name);
}

static im_entry *find(anvil_imatrix *im, const char *name) {
    for (size_t i = 0; i < im->n; ++i) {
        if (strcmp(im->e[i].name, name) == 0) return &im->e[i];
    }
    return NULL;
}

/* The entry called name (created empty, or an existing one emptied: a later
 * duplicate replaces an earlier one, as std::map's [] does). */
static im_entry *entry_for(anvil_imatrix *im, const char *name, size_t name_len, anvil_error *err) {
    char *copy = malloc(name_len + 1);
    if (copy == NULL) {
        anvil__nomem(err);
        return NULL;
    }
    memcpy(copy, name, name_len);
    copy[name_len] = '\0';
    im_entry *e = find(im, copy);
    if (e != NULL) {
        free(copy);
        free(e->values);
        free(e->counts);
        e->values = NULL;
        e->counts = NULL;
        e->n = e->n_counts = 0;
        return e;
    }
    if (im->n == im->cap) {
        const size_t cap = im->cap ? im->cap * 2 : 64;
        im_entry *v = realloc(im->e, cap * sizeof *v);
        if (v == NULL) {
            free(copy);
            anvil__nomem(err);
            return NULL;
        }
        im->e = v;
        im->cap = cap;
    }
    e = &im->e[im->n++];
    memset(e, 0, sizeof *e);
    e->name = copy;
    return e;
}

static int add_dataset(anvil_imatrix *im, const char *s, size_t len, anvil_error *err) {
    char **v = realloc(im->datasets, (im->n_datasets + 1) * sizeof *v);
    if (v == NULL) return anvil__nomem(err);
    im->datasets = v;
    char *c = malloc(len + 1);
    if (c == NULL) return anvil__nomem(err);
    memcpy(c, s, len);
    c[len] = '\0';
    im->datasets[im->n_datasets++] = c;
    return ANVIL_OK;
}

/* ---- legacy .dat ---------------------------------------------------------------- */

typedef struct rd {
    const unsigned char *p;
    size_t size, at;
} rd;

static int rd_i32(rd *r, int32_t *v) {
    if (r->size - r->at < 4) return 0;
    memcpy(v, r->p + r->at, 4);
    r->at += 4;
    return 1;
}

static int load_legacy(anvil_imatrix *im, const unsigned char *data, size_t size, anvil_error *err) {
    rd r = { data, size, 0 };
    int32_t n_entries = 0;
    if (!rd_i32(&r, &n_entries) || n_entries < 1) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "no data in the importance matrix (%zu bytes; neither GGUF nor a legacy .dat "
                                "with entries): make it with llama-imatrix",
                                size);
    }
    for (int32_t i = 0; i < n_entries; ++i) {
        int32_t len = 0;
        if (!rd_i32(&r, &len) || len < 0 || (size_t)len > r.size - r.at) {
            return anvil__error_set(err, ANVIL_E_TRUNCATED,
                                    "legacy imatrix: entry %d of %d: bad or truncated name (length %d at byte %zu "
                                    "of %zu)",
                                    (int)i + 1, (int)n_entries, (int)len, r.at, r.size);
        }
        const char *name = (const char *)r.p + r.at;
        const void *nul = memchr(name, '\0', (size_t)len);
        const size_t name_len = nul ? (size_t)((const char *)nul - name) : (size_t)len;
        r.at += (size_t)len;
        int32_t ncall = 0, nval = 0;
        if (!rd_i32(&r, &ncall) || !rd_i32(&r, &nval) || nval < 1) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "legacy imatrix: entry %d ('%.*s'): failed reading the number of values",
                                    (int)i + 1, (int)(name_len > 200 ? 200 : name_len), name);
        }
        if ((size_t)nval > (r.size - r.at) / 4) {
            return anvil__error_set(err, ANVIL_E_TRUNCATED,
                                    "legacy imatrix: entry %d ('%.*s') holds %d values but only %zu bytes are left",
                                    (int)i + 1, (int)(name_len > 200 ? 200 : name_len), name, (int)nval,
                                    r.size - r.at);
        }
        im_entry *e = entry_for(im, name, name_len, err);
        if (e == NULL) return ANVIL_E_NOMEM;
        e->values = malloc((size_t)nval * sizeof *e->values);
        e->counts = malloc(sizeof *e->counts);
        if (e->values == NULL || e->counts == NULL) return anvil__nomem(err);
        memcpy(e->values, r.p + r.at, (size_t)nval * 4);
        r.at += (size_t)nval * 4;
        e->n = (size_t)nval;
        e->counts[0] = ncall;
        e->n_counts = 1;
    }
    /* Optional trailer: chunk count, then the dataset's name. A short read
     * keeps the bytes that were there (istream::read). */
    if (r.at < r.size) {
        unsigned char b[4] = { 0, 0, 0, 0 };
        const size_t have = r.size - r.at < 4 ? r.size - r.at : 4;
        memcpy(b, r.p + r.at, have);
        r.at += have;
        int32_t n_calls;
        memcpy(&n_calls, b, 4);
        im->chunk_count = n_calls;
        int32_t len = 0;
        if (have == 4 && rd_i32(&r, &len) && len > 0 && (size_t)len <= r.size - r.at) {
            const char *s = (const char *)r.p + r.at;
            const void *nul = memchr(s, '\0', (size_t)len);
            const int rc = add_dataset(im, s, nul ? (size_t)((const char *)nul - s) : (size_t)len, err);
            if (rc != ANVIL_OK) return rc;
        }
    }
    im->is_legacy = 1;
    /* Legacy values hold (sum/count)*ncall: divide by ncall. */
    for (size_t i = 0; i < im->n; ++i) {
        im_entry *e = &im->e[i];
        const int64_t ncall = (int64_t)e->counts[0];
        if (ncall > 0) {
            const float d = (float)ncall;
            for (size_t k = 0; k < e->n; ++k) e->values[k] = e->values[k] / d;
        }
    }
    return ANVIL_OK;
}

/* ---- GGUF ------------------------------------------------------------------------- */

static int ends_with(const char *s, size_t n, const char *suffix, size_t *stem) {
    const size_t m = strlen(suffix);
    if (n < m || memcmp(s + n - m, suffix, m) != 0) return 0;
    *stem = n - m;
    return 1;
}

static int load_gguf(anvil_imatrix *im, const anvil_gguf *g, anvil_error *err) {
    const size_t nt = anvil_gguf_tensor_count(g);
    if (nt < 1)
        return anvil__error_set(err, ANVIL_E_FORMAT, "no data in the importance matrix (a GGUF without tensors)");
    const anvil_gguf_kv *ds = anvil_gguf_find_kv(g, "imatrix.datasets");
    const anvil_gguf_kv *cc = anvil_gguf_find_kv(g, "imatrix.chunk_count");
    const anvil_gguf_kv *cs = anvil_gguf_find_kv(g, "imatrix.chunk_size");
    if (ds != NULL && ds->type == ANVIL_GGUF_TYPE_ARRAY && ds->elem_type == ANVIL_GGUF_TYPE_STRING) {
        anvil_gguf_value v;
        anvil_gguf_kv_value(ds, &v);
        for (uint64_t i = 0; i < v.a.count; ++i) {
            anvil_gguf_value s;
            if (anvil_gguf_array_get(&v.a, i, &s) != ANVIL_OK) break;
            const void *nul = memchr(s.s.ptr, '\0', s.s.len);
            const int rc = add_dataset(im, s.s.ptr, nul ? (size_t)((const char *)nul - s.s.ptr) : s.s.len, err);
            if (rc != ANVIL_OK) return rc;
        }
    }
    im->has_metadata = ds != NULL && cc != NULL && cs != NULL;
    for (int k = 0; k < 2; ++k) {
        const anvil_gguf_kv *kv = k == 0 ? cc : cs;
        if (kv != NULL && kv->type != ANVIL_GGUF_TYPE_U32) {
            return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE, "importance matrix: %s must be a u32", kv->key);
        }
    }
    if (cc != NULL) {
        anvil_gguf_value v;
        anvil_gguf_kv_value(cc, &v);
        im->chunk_count = (int32_t)(uint32_t)v.u;
    }
    /* Pair "<name>.in_sum2" with "<name>.counts". */
    for (size_t i = 0; i < nt; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        const size_t n = strlen(t->name);
        size_t stem;
        if (n == 0) continue;
        const int is_sums = ends_with(t->name, n, ".in_sum2", &stem);
        if (!is_sums && !ends_with(t->name, n, ".counts", &stem)) continue;
        char name[ANVIL_GGUF_MAX_TENSOR_NAME + 64];
        if (stem >= sizeof name) continue;
        memcpy(name, t->name, stem);
        name[stem] = '\0';
        im_entry *e = find(im, name);
        if (e == NULL) {
            e = entry_for(im, name, stem, err);
            if (e == NULL) return ANVIL_E_NOMEM;
        }
        if (t->type != ANVIL_TYPE_F32) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "importance matrix: sums and counts for %s must be F32 (%s is %s)", name, t->name,
                                    t->type_info.name);
        }
        if (t->n_elements > SIZE_MAX / sizeof(double)) {
            return anvil__error_set(err, ANVIL_E_OVERFLOW, "importance matrix: %s is too large", t->name);
        }
        const unsigned char *d = t->data;
        if (is_sums) {
            free(e->values);
            e->values = malloc((t->n_elements ? t->n_elements : 1) * sizeof *e->values);
            if (e->values == NULL) return anvil__nomem(err);
            memcpy(e->values, d, (size_t)t->n_elements * 4);
            e->n = (size_t)t->n_elements;
        } else {
            free(e->counts);
            e->counts = malloc((t->n_elements ? t->n_elements : 1) * sizeof *e->counts);
            if (e->counts == NULL) return anvil__nomem(err);
            for (uint64_t k = 0; k < t->n_elements; ++k) {
                float c;
                memcpy(&c, d + 4 * k, 4);
                if (!isfinite(c) || fabsf(c) > 4.0e18f) {
                    return anvil__error_set(err, ANVIL_E_FORMAT,
                                            "importance matrix: count %llu of %s is %g, not a token count",
                                            (unsigned long long)k, name, (double)c);
                }
                e->counts[k] = (double)lroundf(c);
            }
            e->n_counts = (size_t)t->n_elements;
        }
    }
    for (size_t i = 0; i < im->n; ++i) {
        im_entry *e = &im->e[i];
        if (e->values == NULL || e->counts == NULL) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "importance matrix: mismatched sums and counts for %s (it needs both %s.in_sum2 "
                                    "and %s.counts)",
                                    e->name, e->name, e->name);
        }
        if (e->n_counts == 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "importance matrix: %s.counts is empty", e->name);
        }
        /* Divide each expert's sums by its count; an expert never seen gets 1. */
        const size_t per = e->n / e->n_counts;
        float *out = calloc(e->n ? e->n : 1, sizeof *out);
        if (out == NULL) return anvil__nomem(err);
        for (size_t j = 0; j < e->n_counts; ++j) {
            const float count = (float)(int64_t)e->counts[j];
            for (size_t k = 0; k < per; ++k) out[j * per + k] = count > 0.0f ? e->values[j * per + k] / count : 1.0f;
        }
        free(e->values);
        e->values = out;
    }
    return ANVIL_OK;
}

/* ---- loading ------------------------------------------------------------------------- */

static int finish(anvil_imatrix *im, anvil_error *err) {
    for (size_t i = 0; i < im->n; ++i) {
        im_entry *e = &im->e[i];
        free(e->counts);
        e->counts = NULL;
        e->view.name = e->name;
        e->view.values = e->values;
        e->view.n_values = e->n;
    }
    if (im->n > 1) qsort(im->e, im->n, sizeof *im->e, cmp_entry);
    if (!im->is_legacy && !im->has_metadata) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, "
                                "imatrix.chunk_size): llama-quantize refuses such a GGUF too; remake it with "
                                "llama-imatrix");
    }
    return ANVIL_OK;
}

static int load_bytes(anvil_imatrix **out, const unsigned char *data, size_t size, const char *path,
                      anvil_error *err) {
    anvil_imatrix *im = calloc(1, sizeof *im);
    if (im == NULL) return anvil__nomem(err);
    int rc;
    if (size >= 4 && memcmp(data, "GGUF", 4) == 0) {
        anvil_gguf *g = NULL;
        rc = anvil_gguf_open_buffer(&g, data, size, NULL, err);
        if (rc == ANVIL_OK) rc = load_gguf(im, g, err);
        anvil_gguf_close(g);
    } else {
        rc = load_legacy(im, data, size, err);
    }
    if (rc == ANVIL_OK) rc = finish(im, err);
    if (rc != ANVIL_OK) {
        if (path != NULL) anvil__error_prefix(err, "%s", path);
        anvil_imatrix_free(im);
        return rc;
    }
    *out = im;
    return ANVIL_OK;
}

ANVIL_API int anvil_imatrix_load_buffer(anvil_imatrix **out, const void *data, size_t size, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || (data == NULL && size > 0)) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    return load_bytes(out, data, size, NULL, err);
}

ANVIL_API int anvil_imatrix_load(anvil_imatrix **out, const char *path, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || path == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    /* Refused before the open, which for a FIFO would wait for a writer;
     * O_NONBLOCK for a path swapped since (file_input.h). */
    const int checked = file_input_check(path, err);
    if (checked != ANVIL_OK) {
        anvil__error_prefix(err, "importance matrix");
        return checked;
    }
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return anvil__error_set(err, ANVIL_E_IO, "cannot open importance matrix '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "importance matrix '%s' is not a regular file", path);
    }
    const size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            close(fd);
            return anvil__error_set(err, ANVIL_E_IO, "cannot map importance matrix '%s': %s", path, strerror(errno));
        }
    }
    close(fd);
    static const unsigned char empty[1] = { 0 };
    const int rc = load_bytes(out, size ? map : empty, size, path, err);
    if (map != NULL) munmap(map, size);
    return rc;
}

/* ---- filters and access ------------------------------------------------------------------ */

static int contains_any(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (list[i] != NULL && strstr(name, list[i]) != NULL) return 1;
    }
    return 0;
}

ANVIL_API int anvil_imatrix_filter(anvil_imatrix *im, const char *const *include, size_t n_include,
                                   const char *const *exclude, size_t n_exclude, anvil_error *err) {
    if (im == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL importance matrix");
    if (n_include > 0 && n_exclude > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "--include-weights and --exclude-weights cannot be used together");
    }
    size_t k = 0;
    for (size_t i = 0; i < im->n; ++i) {
        im_entry e = im->e[i];
        int keep = 1;
        if (n_exclude > 0 && contains_any(e.name, exclude, n_exclude)) keep = 0;
        if (n_include > 0 && !contains_any(e.name, include, n_include)) keep = 0;
        if (keep) {
            im->e[k++] = e;
        } else {
            free(e.name);
            free(e.values);
        }
    }
    im->n = k;
    return ANVIL_OK;
}

ANVIL_API size_t anvil_imatrix_count(const anvil_imatrix *im) { return im ? im->n : 0; }

ANVIL_API int anvil_imatrix_entry_at(const anvil_imatrix *im, size_t i, anvil_imatrix_entry *out) {
    if (im == NULL || out == NULL || i >= im->n) return ANVIL_E_INVALID_ARG;
    *out = im->e[i].view;
    return ANVIL_OK;
}

ANVIL_API const anvil_imatrix_entry *anvil_imatrix_find(const anvil_imatrix *im, const char *name) {
    if (im == NULL || name == NULL) return NULL;
    size_t lo = 0, hi = im->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(im->e[mid].name, name);
        if (c == 0) return &im->e[mid].view;
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

ANVIL_API int anvil_imatrix_is_legacy(const anvil_imatrix *im) { return im ? im->is_legacy : 0; }
ANVIL_API int32_t anvil_imatrix_chunk_count(const anvil_imatrix *im) { return im ? im->chunk_count : 0; }
ANVIL_API size_t anvil_imatrix_dataset_count(const anvil_imatrix *im) { return im ? im->n_datasets : 0; }

ANVIL_API const char *anvil_imatrix_dataset_at(const anvil_imatrix *im, size_t i) {
    return (im != NULL && i < im->n_datasets) ? im->datasets[i] : NULL;
}
