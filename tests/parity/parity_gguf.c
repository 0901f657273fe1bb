/* SPDX-License-Identifier: MIT */
/*
 * GGUF container parity against ggml's own gguf_* code (the npm oracle):
 *
 *   shared   every GGUF in ../shared/testdata: ggml and anvil accept and
 *            refuse the same files, and for the accepted ones anvil reemit
 *            == ggml read-then-gguf_write_to_file, byte for byte;
 *   written  files written by ggml's writer from random content (every KV
 *            wire type, arrays, re-set keys, removed keys, tensors of many
 *            types and shapes incl. trailing 1 dims and 0-element tensors):
 *            anvil reemit == the ggml file, and the same content built with
 *            anvil's typed setters == the ggml file;
 *   accepted every file anvil writes loads with gguf_init_from_file with the
 *            same counts, alignment, data offset and tensor offsets;
 *   split    anvil split == llama.cpp's gguf-split procedure run on ggml's
 *            API, part by part; merge of the parts == the original.
 *   meta     metadata edits (anvil_gguf_write_metadata, what `anvil meta`
 *            writes with): remove / set / add a key on a ggml-written model
 *            and on the shared files == the same edit done by ggml (read,
 *            gguf_set_kv, the edit, write), byte for byte, whether anvil
 *            rewrote the header only or the whole file; ggml loads each.
 *
 * "ggml read-then-write" is what llama.cpp's tools do: gguf_init_from_file
 * with a ggml context, gguf_init_empty, gguf_set_kv, gguf_add_tensor for
 * each tensor, gguf_write_to_file (re-writing the read context itself is
 * not possible: ggml keeps no tensor data in it).
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/gguf.h"
#include "parity.h"
#include "read_file.h"

#ifndef ANVIL_SHARED_TESTDATA
#define ANVIL_SHARED_TESTDATA ""
#endif

/* ---- ggml's gguf API, by dlsym ------------------------------------------- */

struct ggml_init_params_view {
    size_t mem_size;
    void *mem_buffer;
    bool no_alloc;
};
struct gguf_init_params_view {
    bool no_alloc;
    void **ctx;
};

typedef struct gguf_api {
    void *(*init_from_file)(const char *, struct gguf_init_params_view);
    void *(*init_empty)(void);
    void (*free_ctx)(void *);
    void (*set_kv)(void *, const void *);
    int64_t (*n_tensors)(const void *);
    int64_t (*n_kv)(const void *);
    const char *(*tensor_name)(const void *, int64_t);
    size_t (*tensor_offset)(const void *, int64_t);
    size_t (*data_offset)(const void *);
    size_t (*alignment)(const void *);
    uint32_t (*version)(const void *);
    void (*add_tensor)(void *, const void *);
    void (*set_tensor_data)(void *, const char *, const void *);
    bool (*write_to_file)(const void *, const char *, bool);
    int64_t (*remove_key)(void *, const char *);
    void (*set_u8)(void *, const char *, uint8_t);
    void (*set_i8)(void *, const char *, int8_t);
    void (*set_u16)(void *, const char *, uint16_t);
    void (*set_i16)(void *, const char *, int16_t);
    void (*set_u32)(void *, const char *, uint32_t);
    void (*set_i32)(void *, const char *, int32_t);
    void (*set_f32)(void *, const char *, float);
    void (*set_u64)(void *, const char *, uint64_t);
    void (*set_i64)(void *, const char *, int64_t);
    void (*set_f64)(void *, const char *, double);
    void (*set_bool)(void *, const char *, bool);
    void (*set_str)(void *, const char *, const char *);
    void (*set_arr_data)(void *, const char *, int, const void *, size_t);
    void (*set_arr_str)(void *, const char *, const char **, size_t);
    void *(*ggml_init)(struct ggml_init_params_view);
    void (*ggml_free)(void *);
    void *(*ggml_new_tensor)(void *, int, int, const int64_t *);
    void *(*ggml_set_name)(void *, const char *);
    void *(*ggml_get_tensor)(void *, const char *);
    size_t (*ggml_nbytes)(const void *);
} gguf_api;

static int load_api(const ggml_oracle *o, gguf_api *a) {
    int missing = 0;
#define SYM(field, name)                                       \
    do {                                                       \
        *(void **)&a->field = ggml_oracle_sym(o, name);        \
        if (a->field == NULL) {                                \
            printf("gguf     ggml symbol %s missing\n", name); \
            missing++;                                         \
        }                                                      \
    } while (0)
    SYM(init_from_file, "gguf_init_from_file");
    SYM(init_empty, "gguf_init_empty");
    SYM(free_ctx, "gguf_free");
    SYM(set_kv, "gguf_set_kv");
    SYM(n_tensors, "gguf_get_n_tensors");
    SYM(n_kv, "gguf_get_n_kv");
    SYM(tensor_name, "gguf_get_tensor_name");
    SYM(tensor_offset, "gguf_get_tensor_offset");
    SYM(data_offset, "gguf_get_data_offset");
    SYM(alignment, "gguf_get_alignment");
    SYM(version, "gguf_get_version");
    SYM(add_tensor, "gguf_add_tensor");
    SYM(set_tensor_data, "gguf_set_tensor_data");
    SYM(write_to_file, "gguf_write_to_file");
    SYM(remove_key, "gguf_remove_key");
    SYM(set_u8, "gguf_set_val_u8");
    SYM(set_i8, "gguf_set_val_i8");
    SYM(set_u16, "gguf_set_val_u16");
    SYM(set_i16, "gguf_set_val_i16");
    SYM(set_u32, "gguf_set_val_u32");
    SYM(set_i32, "gguf_set_val_i32");
    SYM(set_f32, "gguf_set_val_f32");
    SYM(set_u64, "gguf_set_val_u64");
    SYM(set_i64, "gguf_set_val_i64");
    SYM(set_f64, "gguf_set_val_f64");
    SYM(set_bool, "gguf_set_val_bool");
    SYM(set_str, "gguf_set_val_str");
    SYM(set_arr_data, "gguf_set_arr_data");
    SYM(set_arr_str, "gguf_set_arr_str");
    SYM(ggml_init, "ggml_init");
    SYM(ggml_free, "ggml_free");
    SYM(ggml_new_tensor, "ggml_new_tensor");
    SYM(ggml_set_name, "ggml_set_name");
    SYM(ggml_get_tensor, "ggml_get_tensor");
    SYM(ggml_nbytes, "ggml_nbytes");
#undef SYM
    return missing == 0 ? 0 : -1;
}

/* ---- helpers --------------------------------------------------------------- */

/* 1 when both files exist and hold the same bytes. */
static int same_file(const char *a, const char *b, int verbose) {
    size_t na = 0, nb = 0;
    uint8_t *pa = (uint8_t *)test_read_file(a, &na), *pb = (uint8_t *)test_read_file(b, &nb);
    int same = pa != NULL && pb != NULL && na == nb && memcmp(pa, pb, na) == 0;
    if (!same && verbose && pa != NULL && pb != NULL) {
        size_t i = 0;
        while (i < na && i < nb && pa[i] == pb[i]) {
            i++;
        }
        printf("         %s vs %s: %zu vs %zu bytes, first difference at byte %zu\n", a, b, na, nb, i);
    }
    free(pa);
    free(pb);
    return same;
}

/* A metadata edit, applied the way ggml's tools do it (check_meta). */
typedef struct meta_edit {
    enum { EDIT_REMOVE, EDIT_U32, EDIT_STR } op;
    const char *key;
    uint32_t u;
    const char *s;
} meta_edit;

/* ggml's read-then-write (see the top comment), with an edit of the KVs
 * between reading and writing when e is not NULL (a set moves the key last).
 * Returns 1 when ggml accepted the input and wrote out. */
static int ggml_edit(const gguf_api *a, const char *in, const char *out, const meta_edit *e) {
    void *meta = NULL;
    struct gguf_init_params_view p = { false, &meta };
    void *src = a->init_from_file(in, p);
    if (src == NULL) {
        return 0;
    }
    void *dst = a->init_empty();
    a->set_kv(dst, src);
    if (e != NULL && e->op == EDIT_REMOVE) {
        a->remove_key(dst, e->key);
    } else if (e != NULL && e->op == EDIT_U32) {
        a->set_u32(dst, e->key, e->u);
    } else if (e != NULL) {
        a->set_str(dst, e->key, e->s);
    }
    for (int64_t i = 0; i < a->n_tensors(src); ++i) {
        const char *name = a->tensor_name(src, i);
        const void *t = a->ggml_get_tensor(meta, name);
        a->add_tensor(dst, t);
        if (a->ggml_nbytes(t) == 0) {
            /* With no bytes at all ggml leaves data NULL, then asserts on
             * it when writing: give it an address to copy 0 bytes from. */
            static const uint8_t nothing[1];
            a->set_tensor_data(dst, name, nothing);
        }
    }
    const int ok = a->write_to_file(dst, out, false);
    a->free_ctx(dst);
    a->free_ctx(src);
    a->ggml_free(meta);
    return ok;
}

static int ggml_rewrite(const gguf_api *a, const char *in, const char *out) { return ggml_edit(a, in, out, NULL); }

/* ggml accepts path and sees what anvil sees. */
static int ggml_agrees(const gguf_api *a, const char *path, int verbose) {
    struct gguf_init_params_view p = { true, NULL };
    void *c = a->init_from_file(path, p);
    if (c == NULL) {
        if (verbose) {
            printf("         ggml refused %s\n", path);
        }
        return 0;
    }
    anvil_gguf *g = NULL;
    anvil_error err;
    int ok = anvil_gguf_open(&g, path, NULL, ANVIL_GGUF_OPEN_SINGLE_PART, &err) == ANVIL_OK;
    ok = ok && (size_t)a->n_tensors(c) == anvil_gguf_tensor_count(g) &&
         (size_t)a->n_kv(c) == anvil_gguf_kv_count(g) && a->alignment(c) == anvil_gguf_alignment(g) &&
         a->data_offset(c) == anvil_gguf_data_offset(g) && a->version(c) == anvil_gguf_version(g);
    for (int64_t i = 0; ok && i < a->n_tensors(c); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, (size_t)i);
        ok = strcmp(t->name, a->tensor_name(c, i)) == 0 && t->offset == a->tensor_offset(c, i);
    }
    if (!ok && verbose) {
        printf("         ggml and anvil disagree about %s\n", path);
    }
    anvil_gguf_close(g);
    a->free_ctx(c);
    return ok;
}

/* ---- shared test data --------------------------------------------------------- */

static void check_shared(parity_ctx *pc, const gguf_api *a, const char *tmp) {
    DIR *d = opendir(ANVIL_SHARED_TESTDATA);
    if (d == NULL) {
        printf("gguf     note: %s absent; shared-file checks skipped\n", ANVIL_SHARED_TESTDATA);
        return;
    }
    size_t files = 0, agree_bad = 0, compared = 0, differ = 0, accepted_bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".gguf") != 0) {
            continue;
        }
        char in[4096], g_out[4200], a_out[4200];
        snprintf(in, sizeof in, "%s/%s", ANVIL_SHARED_TESTDATA, e->d_name);
        snprintf(g_out, sizeof g_out, "%s/ggml-%s", tmp, e->d_name);
        snprintf(a_out, sizeof a_out, "%s/anvil-%s", tmp, e->d_name);
        files++;
        const int ggml_ok = ggml_rewrite(a, in, g_out);
        anvil_error err;
        const int anvil_ok = anvil_gguf_reemit(in, a_out, NULL, &err) == ANVIL_OK;
        printf("gguf     %-40s ggml %-8s anvil %s%s\n", e->d_name, ggml_ok ? "accepts" : "refuses",
               anvil_ok ? "accepts" : "refuses: ", anvil_ok ? "" : err.message);
        if (ggml_ok != anvil_ok) {
            agree_bad++;
        }
        if (ggml_ok && anvil_ok) {
            compared++;
            differ += !same_file(g_out, a_out, 1);
            accepted_bad += !ggml_agrees(a, a_out, 1);
        }
    }
    closedir(d);
    parity_report(pc, "gguf", "shared: accept/refuse as ggml", files, agree_bad);
    parity_report(pc, "gguf", "shared: reemit == ggml rewrite", compared, differ);
    parity_report(pc, "gguf", "shared: ggml loads anvil output", compared, accepted_bad);
}

/* ---- random content through both writers --------------------------------------- */

/* Tensor types drawn for the random files (ggml ids) and their blocks. */
static const struct {
    int type;
    int block;
    int bytes;
} tensor_types[] = {
    { ANVIL_TYPE_F32, 1, 4 },      { ANVIL_TYPE_F16, 1, 2 },      { ANVIL_TYPE_BF16, 1, 2 },
    { ANVIL_TYPE_Q4_0, 32, 18 },   { ANVIL_TYPE_Q8_0, 32, 34 },   { ANVIL_TYPE_Q4_K, 256, 144 },
    { ANVIL_TYPE_Q6_K, 256, 210 }, { ANVIL_TYPE_IQ4_NL, 32, 18 }, { ANVIL_TYPE_TQ2_0, 256, 66 },
    { ANVIL_TYPE_I8, 1, 1 },       { ANVIL_TYPE_I32, 1, 4 },      { ANVIL_TYPE_MXFP4, 32, 17 },
};

typedef struct both {
    const gguf_api *a;
    void *g;    /* ggml gguf context */
    void *meta; /* ggml context holding tensor descriptors */
    anvil_gguf_writer *w;
    test_rng *rng;
    int errors;
    uint8_t *blobs[64];
    size_t n_blobs;
} both;

static uint64_t pick(test_rng *r, uint64_t n) { return test_rng_u64(r) % n; }

static void expect_ok(both *b, int rc, const char *what, const anvil_error *err) {
    if (rc != ANVIL_OK) {
        printf("         anvil %s failed: %s\n", what, err->message);
        b->errors++;
    }
}

/* One random KV, set in both writers with the same wire type. */
static void random_kv(both *b, const char *key) {
    test_rng *r = b->rng;
    anvil_error err;
    const uint64_t x = test_rng_u64(r);
    int rc = ANVIL_OK;
    switch (pick(r, 16)) {
    case 0:
        b->a->set_u8(b->g, key, (uint8_t)x);
        rc = anvil_gguf_writer_set_u8(b->w, key, (uint8_t)x, &err);
        break;
    case 1:
        b->a->set_i8(b->g, key, (int8_t)x);
        rc = anvil_gguf_writer_set_i8(b->w, key, (int8_t)x, &err);
        break;
    case 2:
        b->a->set_u16(b->g, key, (uint16_t)x);
        rc = anvil_gguf_writer_set_u16(b->w, key, (uint16_t)x, &err);
        break;
    case 3:
        b->a->set_i16(b->g, key, (int16_t)x);
        rc = anvil_gguf_writer_set_i16(b->w, key, (int16_t)x, &err);
        break;
    case 4:
        b->a->set_u32(b->g, key, (uint32_t)x);
        rc = anvil_gguf_writer_set_u32(b->w, key, (uint32_t)x, &err);
        break;
    case 5:
        b->a->set_i32(b->g, key, (int32_t)x);
        rc = anvil_gguf_writer_set_i32(b->w, key, (int32_t)x, &err);
        break;
    case 6:
        b->a->set_u64(b->g, key, x);
        rc = anvil_gguf_writer_set_u64(b->w, key, x, &err);
        break;
    case 7:
        b->a->set_i64(b->g, key, (int64_t)x);
        rc = anvil_gguf_writer_set_i64(b->w, key, (int64_t)x, &err);
        break;
    case 8: {
        const float f = test_rng_normal(r) * 1e3f;
        b->a->set_f32(b->g, key, f);
        rc = anvil_gguf_writer_set_f32(b->w, key, f, &err);
        break;
    }
    case 9: {
        const double f = (double)test_rng_normal(r) / 7.0;
        b->a->set_f64(b->g, key, f);
        rc = anvil_gguf_writer_set_f64(b->w, key, f, &err);
        break;
    }
    case 10:
        b->a->set_bool(b->g, key, x & 1);
        rc = anvil_gguf_writer_set_bool(b->w, key, (int)(x & 1), &err);
        break;
    case 11: {
        static const char *const samples[] = { "", "llama", "héllo wörld ✓", "a\tb\nc", "{{ bos }}" };
        const char *s = samples[pick(r, 5)];
        b->a->set_str(b->g, key, s);
        rc = anvil_gguf_writer_set_string(b->w, key, s, &err);
        break;
    }
    case 12:
    case 13: {
        /* A numeric array of a random fixed-width type. */
        static const int types[] = { 0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12 };
        const int t = types[pick(r, 11)];
        const size_t es = anvil_gguf_type_size((uint32_t)t);
        const size_t n = (size_t)pick(r, 40);
        uint8_t *vals = malloc(n * es + 1);
        for (size_t i = 0; i < n * es; ++i) {
            vals[i] = (uint8_t)test_rng_u64(r);
        }
        if (t == ANVIL_GGUF_TYPE_BOOL) {
            for (size_t i = 0; i < n; ++i) {
                vals[i] &= 1; /* ggml copies bool arrays as bytes: keep them 0/1 */
            }
        }
        b->a->set_arr_data(b->g, key, t, vals, n);
        rc = anvil_gguf_writer_set_array(b->w, key, (uint32_t)t, vals, n, &err);
        free(vals);
        break;
    }
    default: {
        const size_t n = (size_t)pick(r, 20);
        const char *items[20];
        char store[20][24];
        for (size_t i = 0; i < n; ++i) {
            snprintf(store[i], sizeof store[i], "tok%llu", (unsigned long long)pick(r, 100000));
            items[i] = store[i];
        }
        b->a->set_arr_str(b->g, key, items, n);
        rc = anvil_gguf_writer_set_string_array(b->w, key, items, n, &err);
        break;
    }
    }
    expect_ok(b, rc, "set", &err);
}

static void random_tensor(both *b, int index) {
    test_rng *r = b->rng;
    const int k = (int)pick(r, sizeof tensor_types / sizeof tensor_types[0]);
    int64_t ne[4] = { 1, 1, 1, 1 };
    const int n_dims = 1 + (int)pick(r, 4);
    ne[0] = (int64_t)tensor_types[k].block * (1 + (int64_t)pick(r, 3));
    for (int j = 1; j < n_dims; ++j) {
        ne[j] = 1 + (int64_t)pick(r, 3); /* 1s included: trailing ones get trimmed */
    }
    if (pick(r, 10) == 0) {
        ne[0] = 0; /* a 0-element tensor (ne[0] = 0 is written alike by both) */
    }
    char name[32];
    snprintf(name, sizeof name, "blk.%d.w%d", index / 3, index);
    const uint64_t n_el = (uint64_t)(ne[0] * ne[1] * ne[2] * ne[3]);
    const size_t bytes = (size_t)(n_el / (uint64_t)tensor_types[k].block * (uint64_t)tensor_types[k].bytes);
    uint8_t *data = malloc(bytes + 1); /* never NULL: ggml asserts data != NULL */
    for (size_t i = 0; i < bytes; ++i) {
        data[i] = (uint8_t)test_rng_u64(r);
    }
    b->blobs[b->n_blobs++] = data;
    void *t = b->a->ggml_new_tensor(b->meta, tensor_types[k].type, n_dims, ne);
    b->a->ggml_set_name(t, name);
    b->a->add_tensor(b->g, t);
    b->a->set_tensor_data(b->g, name, data);
    const uint64_t une[4] = { (uint64_t)ne[0], (uint64_t)ne[1], (uint64_t)ne[2], (uint64_t)ne[3] };
    anvil_error err;
    expect_ok(b,
              anvil_gguf_writer_add_tensor(b->w, name, (uint32_t)tensor_types[k].type, (uint32_t)n_dims, une, data,
                                           bytes, &err),
              "add_tensor", &err);
}

/* One random file written by ggml and, from the same calls, by anvil. */
static int build_random(both *b, const gguf_api *a, test_rng *r) {
    memset(b, 0, sizeof *b);
    b->a = a;
    b->rng = r;
    struct ggml_init_params_view gp = { 4u << 20, NULL, true };
    b->meta = a->ggml_init(gp);
    b->g = a->init_empty();
    anvil_error err;
    if (b->meta == NULL || b->g == NULL || anvil_gguf_writer_new(&b->w, NULL, &err) != ANVIL_OK) {
        return -1;
    }
    const int n_kv = (int)pick(r, 24);
    for (int i = 0; i < n_kv; ++i) {
        char key[32];
        /* A small key space so that some keys are set twice (moved last). */
        snprintf(key, sizeof key, "test.key%d", (int)pick(r, 18));
        random_kv(b, key);
        if (pick(r, 12) == 0) {
            snprintf(key, sizeof key, "test.key%d", (int)pick(r, 18));
            a->remove_key(b->g, key);
            anvil_gguf_writer_remove_key(b->w, key);
        }
    }
    const int n_t = (int)pick(r, 12);
    for (int i = 0; i < n_t; ++i) {
        random_tensor(b, i);
    }
    return 0;
}

static void free_both(both *b) {
    if (b->g != NULL) {
        b->a->free_ctx(b->g);
    }
    if (b->meta != NULL) {
        b->a->ggml_free(b->meta);
    }
    anvil_gguf_writer_free(b->w);
    for (size_t i = 0; i < b->n_blobs; ++i) {
        free(b->blobs[i]);
    }
}

static void check_written(parity_ctx *pc, const gguf_api *a, const char *tmp) {
    test_rng r;
    test_rng_seed(&r, pc->seed ^ 0x6767756621ull);
    const size_t files = pc->rows >= 2000 ? 200 : 50;
    size_t setters_bad = 0, reemit_bad = 0, accept_bad = 0, rewrite_bad = 0, errors = 0;
    size_t total_kv = 0, total_t = 0, empty_t = 0;
    uint64_t total_bytes = 0;
    for (size_t f = 0; f < files; ++f) {
        both b;
        char gpath[4200], apath[4200], rpath[4200], ggpath[4200];
        snprintf(gpath, sizeof gpath, "%s/rand%zu-ggml.gguf", tmp, f);
        snprintf(apath, sizeof apath, "%s/rand%zu-setters.gguf", tmp, f);
        snprintf(rpath, sizeof rpath, "%s/rand%zu-reemit.gguf", tmp, f);
        snprintf(ggpath, sizeof ggpath, "%s/rand%zu-ggml2.gguf", tmp, f);
        if (build_random(&b, a, &r) != 0 || !a->write_to_file(b.g, gpath, false)) {
            errors++;
            free_both(&b);
            continue;
        }
        anvil_error err;
        /* anvil's typed setters == ggml's writer */
        if (anvil_gguf_writer_write_file(b.w, apath, &err) != ANVIL_OK) {
            printf("         anvil write: %s\n", err.message);
            errors++;
        }
        errors += (size_t)b.errors;
        total_kv += anvil_gguf_writer_kv_count(b.w);
        total_t += anvil_gguf_writer_tensor_count(b.w);
        for (size_t t = 0; t < anvil_gguf_writer_tensor_count(b.w); ++t) {
            empty_t += anvil_gguf_writer_tensor_bytes(b.w, t) == 0;
        }
        {
            struct stat st;
            total_bytes += stat(gpath, &st) == 0 ? (uint64_t)st.st_size : 0;
        }
        setters_bad += !same_file(gpath, apath, 1);
        /* anvil reemit of ggml's file == ggml's file */
        if (anvil_gguf_reemit(gpath, rpath, NULL, &err) != ANVIL_OK) {
            printf("         anvil reemit of %s: %s\n", gpath, err.message);
            reemit_bad++;
        } else {
            reemit_bad += !same_file(gpath, rpath, 1);
        }
        /* ggml loads what anvil wrote and re-writes it unchanged */
        accept_bad += !ggml_agrees(a, apath, 1);
        rewrite_bad += !(ggml_rewrite(a, apath, ggpath) && same_file(apath, ggpath, 1));
        free_both(&b);
        unlink(gpath);
        unlink(apath);
        unlink(rpath);
        unlink(ggpath);
    }
    printf("gguf     written: %zu ggml files, %zu KVs, %zu tensors (%zu with 0 bytes), %llu bytes\n", files, total_kv,
           total_t, empty_t, (unsigned long long)total_bytes);
    parity_report(pc, "gguf", "written: typed setters == ggml", files, setters_bad + errors);
    parity_report(pc, "gguf", "written: reemit(ggml file) == it", files, reemit_bad);
    parity_report(pc, "gguf", "written: ggml loads anvil file", files, accept_bad);
    parity_report(pc, "gguf", "written: ggml rewrite == anvil", files, rewrite_bad);
}

/* Non-default alignment: ggml's writer cannot produce it consistently (its
 * set_val_u32 does not change the padding it uses), so the check is that
 * ggml READS anvil's file with the same alignment, data offset and tensor
 * offsets, for every power of two up to 4096. */
static void check_alignment(parity_ctx *pc, const gguf_api *a, const char *tmp) {
    size_t checked = 0, bad = 0;
    static uint8_t data[3 * 4096];
    for (uint32_t al = 1; al <= 4096; al *= 2) {
        anvil_gguf_writer *w = NULL;
        anvil_error err;
        anvil_gguf_writer_new(&w, NULL, &err);
        anvil_gguf_writer_set_string(w, "general.name", "aligned", &err);
        anvil_gguf_writer_set_u32(w, ANVIL_GGUF_KEY_ALIGNMENT, al, &err);
        const uint64_t ne1[1] = { 3 }, ne2[2] = { 64, 2 }, ne3[1] = { 1000 };
        anvil_gguf_writer_add_tensor(w, "x", ANVIL_TYPE_F32, 1, ne1, data, 12, &err);
        anvil_gguf_writer_add_tensor(w, "y", ANVIL_TYPE_Q8_0, 2, ne2, data, 136, &err);
        anvil_gguf_writer_add_tensor(w, "z", ANVIL_TYPE_F16, 1, ne3, data, 2000, &err);
        char path[4200];
        snprintf(path, sizeof path, "%s/align%u.gguf", tmp, al);
        const int rc = anvil_gguf_writer_write_file(w, path, &err);
        anvil_gguf_writer_free(w);
        checked++;
        bad += rc != ANVIL_OK || !ggml_agrees(a, path, 1);
        unlink(path);
    }
    parity_report(pc, "gguf", "alignment 1..4096: ggml loads", checked, bad);
}

/* ---- split against llama.cpp's gguf-split, run on ggml's API ------------------- */

/* gguf-split's strategy (llama.cpp's tools/gguf-split): part 0 gets every KV via
 * gguf_set_kv, every part gets split.no, split.count (placeholder),
 * split.tensors.count, then split.count again (moving it last); a new part
 * starts every max_tensors tensors, or when the tensor bytes (each padded to
 * 32) would exceed max_bytes. */
static void *ggml_new_part(const gguf_api *a, const void *src, int no, int64_t n) {
    void *c = a->init_empty();
    if (no == 0) {
        a->set_kv(c, src);
    }
    a->set_u16(c, "split.no", (uint16_t)no);
    a->set_u16(c, "split.count", 0);
    a->set_i32(c, "split.tensors.count", (int32_t)n);
    return c;
}

static int ggml_split(const gguf_api *a, const char *in, const char *prefix, uint64_t max_bytes, int64_t max_tensors,
                      int *n_parts) {
    void *meta = NULL;
    struct gguf_init_params_view p = { false, &meta };
    void *src = a->init_from_file(in, p);
    if (src == NULL) {
        return -1;
    }
    const int64_t n = a->n_tensors(src);
    void *outs[256];
    int parts = 0;
    outs[parts++] = ggml_new_part(a, src, 0, n);
    uint64_t cur = 0;
    int ok = 1;
    for (int64_t i = 0; i < n; ++i) {
        const void *t = a->ggml_get_tensor(meta, a->tensor_name(src, i));
        const uint64_t nb = (a->ggml_nbytes(t) + 31) / 32 * 32;
        const uint64_t next = cur + nb;
        int split = max_tensors > 0 ? (i > 0 && i % max_tensors == 0) : next > max_bytes;
        if (i == 0) {
            split = 0; /* gguf-split would leave part 1 empty and stop */
        }
        if (split) {
            if (parts == 256) {
                ok = 0;
                break;
            }
            outs[parts] = ggml_new_part(a, src, parts, n);
            parts++;
            cur = nb;
        } else {
            cur = next;
        }
        a->add_tensor(outs[parts - 1], t);
    }
    for (int k = 0; k < parts; ++k) {
        a->set_u16(outs[k], "split.count", (uint16_t)parts);
        char path[4400];
        snprintf(path, sizeof path, "%s-%05d-of-%05d.gguf", prefix, k + 1, parts);
        ok &= a->write_to_file(outs[k], path, false);
        a->free_ctx(outs[k]);
    }
    a->free_ctx(src);
    a->ggml_free(meta);
    *n_parts = parts;
    return ok ? 0 : -1;
}

static void check_split(parity_ctx *pc, const gguf_api *a, const char *tmp) {
    /* A ggml-written model with 24 tensors. */
    test_rng r;
    test_rng_seed(&r, pc->seed ^ 0x73706c6974ull);
    both b;
    build_random(&b, a, &r);
    while (anvil_gguf_writer_tensor_count(b.w) < 24) {
        random_tensor(&b, (int)anvil_gguf_writer_tensor_count(b.w));
    }
    char model[4200];
    snprintf(model, sizeof model, "%s/split-model.gguf", tmp);
    const int wrote = a->write_to_file(b.g, model, false);
    free_both(&b);
    size_t checked = 0, bad = 0, merged_bad = 0, accept_bad = 0;
    static const struct {
        uint64_t bytes;
        int64_t tensors;
    } limits[] = { { 0, 1 },  { 0, 3 },     { 0, 7 },     { 0, 23 },     { 0, 24 },
                   { 0, 50 }, { 20000, 0 }, { 40000, 0 }, { 100000, 0 }, { 1000000000, 0 } };
    for (size_t li = 0; wrote && li < sizeof limits / sizeof limits[0]; ++li) {
        char gp[4200], ap[4200];
        snprintf(gp, sizeof gp, "%s/g%zu", tmp, li);
        snprintf(ap, sizeof ap, "%s/a%zu", tmp, li);
        int gparts = 0;
        uint32_t aparts = 0;
        anvil_gguf *src = NULL;
        anvil_error err = { 0 };
        int rc = ggml_split(a, model, gp, limits[li].bytes, limits[li].tensors, &gparts);
        if (rc == 0 && anvil_gguf_open(&src, model, NULL, 0, &err) == ANVIL_OK) {
            rc = anvil_gguf_split_write(src, ap, limits[li].bytes, (uint64_t)limits[li].tensors, NULL, &aparts, &err);
        } else {
            rc = -1;
        }
        anvil_gguf_close(src);
        checked++;
        if (rc != ANVIL_OK || (int)aparts != gparts) {
            printf("         split limit %zu: ggml %d parts, anvil %u (%s)\n", li, gparts, aparts, err.message);
            bad++;
            continue;
        }
        if (pc->verbose) {
            printf("         split limit %zu: %d parts\n", li, gparts);
        }
        for (int k = 1; k <= gparts; ++k) {
            char g1[4300], a1[4300];
            snprintf(g1, sizeof g1, "%s-%05d-of-%05d.gguf", gp, k, gparts);
            snprintf(a1, sizeof a1, "%s-%05d-of-%05d.gguf", ap, k, gparts);
            bad += !same_file(g1, a1, 1);
            accept_bad += !ggml_agrees(a, a1, 1);
            unlink(g1);
        }
        char first[4300], merged[4300];
        snprintf(first, sizeof first, "%s-00001-of-%05d.gguf", ap, gparts);
        snprintf(merged, sizeof merged, "%s-merged.gguf", ap);
        merged_bad += anvil_gguf_merge(first, merged, NULL, &err) != ANVIL_OK || !same_file(merged, model, 1);
        for (int k = 1; k <= gparts; ++k) {
            char a1[4300];
            snprintf(a1, sizeof a1, "%s-%05d-of-%05d.gguf", ap, k, gparts);
            unlink(a1);
        }
        unlink(merged);
    }
    if (!wrote) {
        bad++;
    }
    unlink(model);
    parity_report(pc, "gguf", "split == gguf-split via ggml", checked, bad);
    parity_report(pc, "gguf", "split parts load in ggml", checked, accept_bad);
    parity_report(pc, "gguf", "split -> merge == original", checked, merged_bad);
}

/* ---- metadata edits ------------------------------------------------------------ */

/* anvil's edit through anvil_gguf_write_metadata, with ggml's key order. */
static int anvil_edit(const char *in, const char *out, const meta_edit *e, int *header_only, anvil_error *err) {
    anvil_gguf *src = NULL;
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_open(&src, in, NULL, ANVIL_GGUF_OPEN_SINGLE_PART, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_new(&w, NULL, err);
    if (rc == ANVIL_OK)
        rc = anvil_gguf_writer_copy_from(w, src, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_CANONICAL_BOOL, err);
    if (rc == ANVIL_OK) {
        if (e->op == EDIT_REMOVE) {
            anvil_gguf_writer_remove_key(w, e->key);
        } else if (e->op == EDIT_U32) {
            rc = anvil_gguf_writer_set_u32(w, e->key, e->u, err);
        } else {
            rc = anvil_gguf_writer_set_string(w, e->key, e->s, err);
        }
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_copy_from(w, src, ANVIL_GGUF_COPY_TENSORS, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_write_metadata(src, w, out, header_only, err);
    anvil_gguf_writer_free(w);
    anvil_gguf_close(src);
    return rc;
}

static void check_meta(parity_ctx *pc, const gguf_api *a, const char *tmp) {
    /* A ggml-written model with keys to edit, and the shared real model. */
    test_rng r;
    test_rng_seed(&r, pc->seed ^ 0x6d657461ull);
    both b;
    build_random(&b, a, &r);
    while (anvil_gguf_writer_tensor_count(b.w) < 16) {
        random_tensor(&b, (int)anvil_gguf_writer_tensor_count(b.w));
    }
    a->set_str(b.g, "meta.name", "tiny");
    a->set_u32(b.g, "meta.n", 7);
    char model[4200];
    snprintf(model, sizeof model, "%s/meta-model.gguf", tmp);
    const int wrote = a->write_to_file(b.g, model, false);
    free_both(&b);
    const char *inputs[2] = { model, ANVIL_SHARED_TESTDATA "/stories260K.v3.gguf" };
    static const char long_name[] = "a name long enough to move the data section of the file: "
                                    "0123456789012345678901234567890123456789012345678901234567890123456789";
    const meta_edit edits[] = {
        { EDIT_REMOVE, "meta.n", 0, NULL },
        { EDIT_U32, "meta.n", 9, NULL },
        { EDIT_STR, "meta.name", 0, long_name },
        { EDIT_U32, "meta.added", 1, NULL },
        { EDIT_REMOVE, "meta.name", 0, NULL },
        { EDIT_STR, "general.name", 0, "renamed" },
        { EDIT_REMOVE, "general.architecture", 0, NULL },
        { EDIT_STR, "general.name", 0, long_name },
    };
    size_t checked = 0, bad = 0, refused = 0, header_only = 0, full = 0;
    for (size_t f = 0; f < 2; ++f) {
        struct stat st;
        if (f == 0 ? !wrote : stat(inputs[f], &st) != 0) {
            if (f == 1) printf("gguf     note: %s absent; meta edits on it skipped\n", inputs[f]);
            continue;
        }
        for (size_t i = 0; i < sizeof edits / sizeof edits[0]; ++i) {
            char g_out[4300], a_out[4300];
            snprintf(g_out, sizeof g_out, "%s/meta-g%zu-%zu.gguf", tmp, f, i);
            snprintf(a_out, sizeof a_out, "%s/meta-a%zu-%zu.gguf", tmp, f, i);
            anvil_error err = { 0 };
            int ho = 0;
            checked++;
            if (!ggml_edit(a, inputs[f], g_out, &edits[i]) ||
                anvil_edit(inputs[f], a_out, &edits[i], &ho, &err) != ANVIL_OK) {
                printf("         meta edit %zu on %s failed: %s\n", i, inputs[f], err.message);
                bad++;
                continue;
            }
            header_only += ho;
            full += !ho;
            bad += !same_file(g_out, a_out, 1);
            refused += !ggml_agrees(a, a_out, 1);
            if (pc->verbose)
                printf("         meta edit %zu on %s: %s\n", i, inputs[f], ho ? "header only" : "rewritten");
            unlink(g_out);
            unlink(a_out);
        }
    }
    unlink(model);
    printf("gguf     meta edits: %zu header-only, %zu whole-file rewrites\n", header_only, full);
    parity_report(pc, "gguf", "meta edit == ggml edit", checked, bad);
    parity_report(pc, "gguf", "meta edits load in ggml", checked, refused);
    parity_report(pc, "gguf", "meta: both write paths taken", 1, header_only == 0 || full == 0);
}

int parity_gguf(parity_ctx *pc) {
    gguf_api a;
    if (load_api(pc->oracle, &a) != 0) {
        parity_report(pc, "gguf", "ggml gguf API present", 1, 1);
        return 1;
    }
    char tmp[] = "/tmp/anvil-parity-gguf-XXXXXX";
    if (mkdtemp(tmp) == NULL) {
        parity_report(pc, "gguf", "temp folder", 1, 1);
        return 1;
    }
    const size_t before = pc->total_failures;
    check_shared(pc, &a, tmp);
    check_written(pc, &a, tmp);
    check_alignment(pc, &a, tmp);
    check_split(pc, &a, tmp);
    check_meta(pc, &a, tmp);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) {
        printf("gguf     note: could not remove %s\n", tmp);
    }
    return (int)(pc->total_failures - before);
}
