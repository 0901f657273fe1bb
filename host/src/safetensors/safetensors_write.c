/* SPDX-License-Identifier: MIT */
/*
 * safetensors writer, byte-identical to upstream's serializer
 * (huggingface/safetensors tensor.rs prepare/serialize):
 *
 *  - tensors sorted by dtype, later-declared dtypes first (upstream sorts
 *    with right.dtype().cmp(left.dtype()) on its enum), then by name in byte
 *    order; data offsets run contiguously in that order;
 *  - the header is serde_json's compact form of a map: "__metadata__" first
 *    when present, then every tensor as
 *    {"dtype":"F32","shape":[..],"data_offsets":[b,e]};
 *    strings escaped as serde_json does (only '"', '\\' and control
 *    characters; \b \t \n \f \r by name, the rest as lowercase \u00xx);
 *  - the header padded with spaces to a multiple of 8 bytes, and refused
 *    above 100,000,000 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/safetensors.h"
#include "error.h"
#include "json.h"
#include "safetensors_internal.h"

typedef struct wentry {
    char *name;
    anvil_st_dtype dtype;
    uint64_t *shape;
    size_t rank;
    const void *data;
    uint64_t size;
} wentry;

struct anvil_st_writer {
    wentry *entries;
    size_t count, cap;
    char **meta_keys;
    char **meta_values;
    size_t meta_count, meta_cap;
    int has_metadata;
};

ANVIL_API int anvil_st_writer_new(anvil_st_writer **out, anvil_error *err) {
    if (out == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_new: NULL argument");
    }
    *out = calloc(1, sizeof **out);
    if (*out == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
    }
    return ANVIL_OK;
}

ANVIL_API void anvil_st_writer_free(anvil_st_writer *w) {
    if (w == NULL) {
        return;
    }
    for (size_t i = 0; i < w->count; i++) {
        free(w->entries[i].name);
        free(w->entries[i].shape);
    }
    for (size_t i = 0; i < w->meta_count; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->entries);
    free(w->meta_keys);
    free(w->meta_values);
    free(w);
}

static int check_utf8(const char *s, const char *what, anvil_error *err) {
    const size_t len = strlen(s);
    const size_t ok = anvil__utf8_valid_prefix((const unsigned char *)s, len);
    if (ok != len) {
        char q[ANVIL_ST_QUOTED_MAX];
        anvil__st_quote(q, s);
        return anvil__error_set(err, ANVIL_E_ST_UTF8, "safetensors writer: %s %s is not valid UTF-8 (byte %zu)", what,
                                q, ok);
    }
    return ANVIL_OK;
}

static char *dup_string(const char *s) {
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) {
        memcpy(d, s, n);
    }
    return d;
}

ANVIL_API int anvil_st_writer_add(anvil_st_writer *w, const char *name, anvil_st_dtype dtype, const uint64_t *shape,
                                  size_t rank, const void *data, uint64_t size, anvil_error *err) {
    if (w == NULL || name == NULL || (shape == NULL && rank != 0) || (data == NULL && size != 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_add: NULL argument");
    }
    char q[ANVIL_ST_QUOTED_MAX];
    anvil__st_quote(q, name);
    if ((unsigned)dtype >= ANVIL_ST_DTYPE_COUNT) {
        return anvil__error_set(err, ANVIL_E_ST_DTYPE,
                                "safetensors writer: tensor %s: dtype %d is not a safetensors "
                                "dtype",
                                q, (int)dtype);
    }
    int rc = check_utf8(name, "tensor name", err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (strcmp(name, "__metadata__") == 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "safetensors writer: \"__metadata__\" is reserved and cannot name "
                                "a tensor");
    }
    uint64_t n_elements = 0, bytes = 0;
    anvil_error sub;
    rc = anvil__st_tensor_bytes(dtype, shape, rank, name, &n_elements, &bytes, &sub);
    if (rc != ANVIL_OK) {
        return anvil__error_set(err, rc, "safetensors writer: %s", sub.message);
    }
    if (bytes != size) {
        return anvil__error_set(err, ANVIL_E_ST_SIZE_MISMATCH,
                                "safetensors writer: tensor %s: %llu elements of %s take %llu "
                                "bytes, but %llu were given",
                                q, (unsigned long long)n_elements, anvil_st_dtype_name(dtype),
                                (unsigned long long)bytes, (unsigned long long)size);
    }
    if (w->count == w->cap) {
        const size_t ncap = w->cap ? w->cap * 2 : 16;
        wentry *ne = ncap <= SIZE_MAX / sizeof *ne ? realloc(w->entries, ncap * sizeof *ne) : NULL;
        if (ne == NULL) {
            return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
        }
        w->entries = ne;
        w->cap = ncap;
    }
    wentry *e = &w->entries[w->count];
    memset(e, 0, sizeof *e);
    e->name = dup_string(name);
    e->shape = rank <= SIZE_MAX / sizeof *shape ? malloc(rank ? rank * sizeof *shape : 1) : NULL;
    if (e->name == NULL || e->shape == NULL) {
        free(e->name);
        free(e->shape);
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
    }
    if (rank != 0) {
        memcpy(e->shape, shape, rank * sizeof *shape);
    }
    e->dtype = dtype;
    e->rank = rank;
    e->data = data;
    e->size = size;
    w->count++;
    return ANVIL_OK;
}

ANVIL_API void anvil_st_writer_keep_empty_metadata(anvil_st_writer *w) {
    if (w != NULL) {
        w->has_metadata = 1;
    }
}

ANVIL_API int anvil_st_writer_set_metadata(anvil_st_writer *w, const char *key, const char *value, anvil_error *err) {
    if (w == NULL || key == NULL || value == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_set_metadata: NULL argument");
    }
    int rc = check_utf8(key, "metadata key", err);
    if (rc == ANVIL_OK) {
        rc = check_utf8(value, "metadata value", err);
    }
    if (rc != ANVIL_OK) {
        return rc;
    }
    char *v = dup_string(value);
    if (v == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
    }
    for (size_t i = 0; i < w->meta_count; i++) {
        if (strcmp(w->meta_keys[i], key) == 0) {
            free(w->meta_values[i]);
            w->meta_values[i] = v;
            w->has_metadata = 1;
            return ANVIL_OK;
        }
    }
    if (w->meta_count == w->meta_cap) {
        const size_t ncap = w->meta_cap ? w->meta_cap * 2 : 8;
        char **nk = realloc(w->meta_keys, ncap * sizeof *nk);
        if (nk != NULL) {
            w->meta_keys = nk;
        }
        char **nv = nk != NULL ? realloc(w->meta_values, ncap * sizeof *nv) : NULL;
        if (nv == NULL) {
            free(v);
            return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
        }
        w->meta_values = nv;
        w->meta_cap = ncap;
    }
    char *k = dup_string(key);
    if (k == NULL) {
        free(v);
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
    }
    w->meta_keys[w->meta_count] = k;
    w->meta_values[w->meta_count] = v;
    w->meta_count++;
    w->has_metadata = 1;
    return ANVIL_OK;
}

ANVIL_API int anvil_st_writer_add_all(anvil_st_writer *w, const anvil_st *st, anvil_error *err) {
    if (w == NULL || st == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_add_all: NULL argument");
    }
    if (anvil_st_has_metadata(st)) {
        anvil_st_writer_keep_empty_metadata(w);
    }
    for (size_t i = 0; i < anvil_st_metadata_count(st); i++) {
        const char *k, *v;
        anvil_st_metadata_at(st, i, &k, &v);
        const int rc = anvil_st_writer_set_metadata(w, k, v, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    for (size_t i = 0; i < anvil_st_count(st); i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        const int rc = anvil_st_writer_add(w, t->name, t->dtype, t->shape, t->rank, t->data, t->size, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    return ANVIL_OK;
}

/* ---- header JSON -------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->failed) {
        return;
    }
    if (b->cap - b->len < n) {
        size_t ncap = b->cap ? b->cap : 256;
        while (ncap - b->len < n) {
            if (ncap > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            ncap *= 2;
        }
        char *np = realloc(b->p, ncap);
        if (np == NULL) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_u64(sbuf *b, uint64_t v) {
    char t[24];
    const int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    sb_put(b, t, (size_t)n);
}

/* A JSON string the way serde_json writes one. */
static void sb_string(sbuf *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    sb_put(b, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p != '\0'; p++) {
        const unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        sb_put(b, run, (size_t)(p - run));
        char esc[6] = { '\\', 0, 0, 0, 0, 0 };
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
            break;
        }
        sb_put(b, esc, n);
        run = p + 1;
    }
    sb_puts(b, run);
    sb_put(b, "\"", 1);
}

/* Upstream's order: dtype descending, then name ascending (byte order). */
static int wentry_cmp(const void *a, const void *b) {
    const wentry *x = *(const wentry *const *)a;
    const wentry *y = *(const wentry *const *)b;
    if (x->dtype != y->dtype) {
        return x->dtype > y->dtype ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static int wentry_cmp_name(const void *a, const void *b) {
    const wentry *x = *(const wentry *const *)a;
    const wentry *y = *(const wentry *const *)b;
    return strcmp(x->name, y->name);
}

void anvil__st_plan_free(anvil_st_plan *plan) {
    free(plan->head);
    free(plan->chunks);
    memset(plan, 0, sizeof *plan);
}

int anvil__st_writer_plan(const anvil_st_writer *w, anvil_st_plan *plan, anvil_error *err) {
    memset(plan, 0, sizeof *plan);
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "safetensors writer: NULL writer");
    }
    const size_t count = w->count;
    const wentry **order = malloc((count ? count : 1) * sizeof *order);
    if (order == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
    }
    for (size_t i = 0; i < count; i++) {
        order[i] = &w->entries[i];
    }
    /* Names must be unique: a JSON object cannot hold one key twice. */
    qsort(order, count, sizeof *order, wentry_cmp_name);
    for (size_t i = 1; i < count; i++) {
        if (strcmp(order[i]->name, order[i - 1]->name) == 0) {
            char q[ANVIL_ST_QUOTED_MAX];
            anvil__st_quote(q, order[i]->name);
            free(order);
            return anvil__error_set(err, ANVIL_E_DUPLICATE, "safetensors writer: tensor %s was added twice", q);
        }
    }
    qsort(order, count, sizeof *order, wentry_cmp);

    sbuf b = { 0 };
    sb_put(&b, "\0\0\0\0\0\0\0\0", 8); /* the length, filled in below */
    sb_put(&b, "{", 1);
    int first = 1;
    if (w->has_metadata) {
        sb_puts(&b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->meta_count; i++) {
            if (i > 0) {
                sb_put(&b, ",", 1);
            }
            sb_string(&b, w->meta_keys[i]);
            sb_put(&b, ":", 1);
            sb_string(&b, w->meta_values[i]);
        }
        sb_put(&b, "}", 1);
        first = 0;
    }
    uint64_t offset = 0;
    int overflow = 0;
    for (size_t i = 0; i < count; i++) {
        const wentry *e = order[i];
        if (!first) {
            sb_put(&b, ",", 1);
        }
        first = 0;
        sb_string(&b, e->name);
        sb_puts(&b, ":{\"dtype\":\"");
        sb_puts(&b, anvil_st_dtype_name(e->dtype));
        sb_puts(&b, "\",\"shape\":[");
        for (size_t d = 0; d < e->rank; d++) {
            if (d > 0) {
                sb_put(&b, ",", 1);
            }
            sb_u64(&b, e->shape[d]);
        }
        sb_puts(&b, "],\"data_offsets\":[");
        sb_u64(&b, offset);
        sb_put(&b, ",", 1);
        if (e->size > UINT64_MAX - offset) {
            overflow = 1;
        }
        offset += e->size;
        sb_u64(&b, offset);
        sb_puts(&b, "]}");
    }
    sb_put(&b, "}", 1);
    while ((b.len - 8) % 8 != 0) {
        sb_put(&b, " ", 1);
    }
    if (b.failed || overflow) {
        free(b.p);
        free(order);
        return anvil__error_set(err, overflow ? ANVIL_E_OVERFLOW : ANVIL_E_NOMEM, "safetensors writer: %s",
                                overflow ? "total data size overflows 64 bits" : "out of memory");
    }
    const uint64_t n = b.len - 8;
    if (n > ANVIL_ST_MAX_HEADER) {
        free(b.p);
        free(order);
        return anvil__error_set(err, ANVIL_E_ST_HEADER_TOO_LARGE,
                                "safetensors writer: the header would take %llu bytes, over the "
                                "100,000,000-byte limit readers accept; split the tensors across "
                                "several files",
                                (unsigned long long)n);
    }
    anvil__st_store_u64le((unsigned char *)b.p, n);

    anvil_st_chunk *chunks = malloc((count ? count : 1) * sizeof *chunks);
    if (chunks == NULL) {
        free(b.p);
        free(order);
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory");
    }
    for (size_t i = 0; i < count; i++) {
        chunks[i].data = order[i]->data;
        chunks[i].size = order[i]->size;
    }
    free(order);
    plan->head = (unsigned char *)b.p;
    plan->head_size = b.len;
    plan->chunks = chunks;
    plan->count = count;
    plan->data_size = offset;
    return ANVIL_OK;
}

/* ---- output ------------------------------------------------------------- */

static int write_all(int fd, const void *p, uint64_t n) {
    const unsigned char *c = p;
    while (n > 0) {
        const size_t step = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
        const ssize_t k = write(fd, c, step);
        if (k < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        if (k == 0) {
            return EIO;
        }
        c += k;
        n -= (uint64_t)k;
    }
    return 0;
}

int anvil__st_plan_write_fd(const anvil_st_plan *plan, int fd, const char *where, anvil_error *err) {
    int e = write_all(fd, plan->head, plan->head_size);
    for (size_t i = 0; e == 0 && i < plan->count; i++) {
        e = write_all(fd, plan->chunks[i].data, plan->chunks[i].size);
    }
    if (e != 0) {
        return anvil__error_set(err, ANVIL_E_IO, "%s: write failed: %s", where, strerror(e));
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_st_writer_serialize(const anvil_st_writer *w, void **out, size_t *size, anvil_error *err) {
    if (out == NULL || size == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_serialize: NULL argument");
    }
    *out = NULL;
    *size = 0;
    anvil_st_plan plan;
    int rc = anvil__st_writer_plan(w, &plan, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (plan.data_size > SIZE_MAX - plan.head_size) {
        anvil__st_plan_free(&plan);
        return anvil__error_set(err, ANVIL_E_OVERFLOW,
                                "safetensors writer: %llu data bytes do not fit in memory here; "
                                "save to a file instead",
                                (unsigned long long)plan.data_size);
    }
    const size_t total = plan.head_size + (size_t)plan.data_size;
    unsigned char *buf = malloc(total);
    if (buf == NULL) {
        anvil__st_plan_free(&plan);
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors writer: out of memory for %zu bytes", total);
    }
    memcpy(buf, plan.head, plan.head_size);
    size_t at = plan.head_size;
    for (size_t i = 0; i < plan.count; i++) {
        if (plan.chunks[i].size != 0) {
            memcpy(buf + at, plan.chunks[i].data, (size_t)plan.chunks[i].size);
        }
        at += (size_t)plan.chunks[i].size;
    }
    anvil__st_plan_free(&plan);
    *out = buf;
    *size = total;
    return ANVIL_OK;
}

ANVIL_API int anvil_st_writer_write_fd(const anvil_st_writer *w, int fd, anvil_error *err) {
    if (fd < 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_write_fd: bad fd");
    }
    anvil_st_plan plan;
    int rc = anvil__st_writer_plan(w, &plan, err);
    if (rc == ANVIL_OK) {
        char where[64];
        snprintf(where, sizeof where, "safetensors stream (fd %d)", fd);
        rc = anvil__st_plan_write_fd(&plan, fd, where, err);
        anvil__st_plan_free(&plan);
    }
    return rc;
}

ANVIL_API int anvil_st_writer_write_file(const anvil_st_writer *w, FILE *stream, anvil_error *err) {
    if (stream == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_write_file: NULL stream");
    }
    anvil_st_plan plan;
    int rc = anvil__st_writer_plan(w, &plan, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    int ok = fwrite(plan.head, 1, plan.head_size, stream) == plan.head_size;
    for (size_t i = 0; ok && i < plan.count; i++) {
        const unsigned char *p = plan.chunks[i].data;
        uint64_t left = plan.chunks[i].size;
        while (ok && left > 0) {
            const size_t step = left > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)left;
            ok = fwrite(p, 1, step, stream) == step;
            p += step;
            left -= step;
        }
    }
    anvil__st_plan_free(&plan);
    if (!ok) {
        return anvil__error_set(err, ANVIL_E_IO, "safetensors stream: write failed: %s", strerror(errno));
    }
    return ANVIL_OK;
}
