/* SPDX-License-Identifier: MIT */
/*
 * Synthetic models per llama.cpp architecture (see parity_quantize_arch.h).
 * Keys: the generic ones every model needs (context and embedding length,
 * block count, feed-forward length, heads), then the architecture's required
 * keys with a plausible value of the type the loader insists on (u32 4,
 * f32 1e-5, bool false, string "", arrays of one u32 4 per layer; an expert
 * count comes with two experts used). Tensors: each name of the table, per
 * layer where it has one; 1-D for norms and biases, 3-D with 4 experts for
 * *_exps, 2-D otherwise.
 */
#include "parity_quantize_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/gguf.h"
#include "quantize_arch_table.h"

#define QZA_EMBD 256u
#define QZA_ROWS 32u
#define QZA_EXPERTS 4u

size_t qza_arch_count(void) { return sizeof qz_arch_rows / sizeof qz_arch_rows[0]; }

const char *qza_arch_name(size_t i) { return i < qza_arch_count() ? qz_arch_rows[i].name : NULL; }

static const qz_arch_row *row_of(const char *name) {
    for (size_t i = 0; i < qza_arch_count(); ++i) {
        if (strcmp(qz_arch_rows[i].name, name) == 0) return &qz_arch_rows[i];
    }
    return NULL;
}

static void fill_key(char *buf, size_t size, const char *fmt, const char *arch) {
    const char *s = strstr(fmt, "%s");
    if (s == NULL) {
        snprintf(buf, size, "%s", fmt);
    } else {
        snprintf(buf, size, "%.*s%s%s", (int)(s - fmt), fmt, arch, s + 2);
    }
}

static uint64_t rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static uint16_t half_of(float f) {
    /* small normal values only: sign, exponent, 10 mantissa bits */
    uint32_t b;
    memcpy(&b, &f, 4);
    const uint32_t sign = (b >> 16) & 0x8000u;
    const int e = (int)((b >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)sign;
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((b >> 13) & 0x3ffu));
}

/* Names already written (keys and tensors): the table repeats some. */
typedef struct qza_seen {
    char names[2048][300];
    size_t n;
} qza_seen;

static qza_seen *g_seen;

static int seen(const char *name) {
    for (size_t i = 0; i < g_seen->n; ++i) {
        if (strcmp(g_seen->names[i], name) == 0) return 1;
    }
    if (g_seen->n < 2048) snprintf(g_seen->names[g_seen->n++], sizeof g_seen->names[0], "%s", name);
    return 0;
}

typedef struct qza_buf {
    void **data;
    size_t n, cap;
} qza_buf;

static void *keep(qza_buf *b, size_t size) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        void **d = realloc(b->data, b->cap * sizeof *d);
        if (d == NULL) return NULL;
        b->data = d;
    }
    void *p = malloc(size ? size : 1);
    if (p != NULL) b->data[b->n++] = p;
    return p;
}

static int add_tensor(anvil_gguf_writer *w, qza_buf *b, const char *name, const qza_spec *s, uint64_t *seed,
                      anvil_error *err) {
    const size_t len = strlen(name);
    const int vec = strstr(name, "norm") != NULL || (len > 5 && strcmp(name + len - 5, ".bias") == 0) ||
                    strstr(name, "rope_f") != NULL || strstr(name, "_scale") != NULL;
    const int exps = strstr(name, "_exps") != NULL;
    uint64_t ne[3] = { QZA_EMBD, QZA_ROWS, QZA_EXPERTS };
    if (strcmp(name, "output.weight") == 0 && s->q6k_output) {
        const size_t nb = QZA_EMBD / 256 * QZA_ROWS;
        anvil_block_q6_K *q = keep(b, nb * sizeof *q);
        if (q == NULL) return -1;
        for (size_t i = 0; i < nb; ++i) {
            uint8_t *p = (uint8_t *)&q[i];
            for (size_t k = 0; k < sizeof q[i]; ++k) p[k] = (uint8_t)rnd(seed);
            for (size_t k = 0; k < 16; ++k) q[i].scales[k] = (int8_t)(1 + (rnd(seed) % 60));
            const uint16_t d = s->q6k_output == 2 && i == 1 ? 0x7e00u : half_of(0.0005f + 0.0001f * (float)(i % 7));
            memcpy(&q[i].d, &d, 2);
        }
        return anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_Q6_K, 2, ne, q, nb * sizeof *q, err);
    }
    const uint32_t n_dims = vec ? 1 : exps ? 3 : 2;
    const uint32_t type = vec ? ANVIL_TYPE_F32 : ANVIL_TYPE_F16;
    const size_t n = vec ? QZA_EMBD : (size_t)QZA_EMBD * QZA_ROWS * (exps ? QZA_EXPERTS : 1);
    const size_t es = vec ? 4 : 2;
    uint8_t *p = keep(b, n * es);
    if (p == NULL) return -1;
    for (size_t i = 0; i < n; ++i) {
        const float v = ((float)(rnd(seed) % 20001) - 10000.0f) / 10000.0f * 0.05f;
        if (vec) {
            memcpy(p + 4 * i, &v, 4);
        } else {
            const uint16_t h = half_of(v);
            memcpy(p + 2 * i, &h, 2);
        }
    }
    return anvil_gguf_writer_add_tensor(w, name, type, n_dims, ne, p, n * es, err);
}

static int is_dropped(const qza_spec *s, const char *key) {
    if (s->drop_key == NULL) return 0;
    char k[256];
    fill_key(k, sizeof k, s->drop_key, s->arch);
    return strcmp(k, key) == 0;
}

/* One required key of the table (type letter, then the format). */
static int set_key(anvil_gguf_writer *w, const qza_spec *s, const char *spec, anvil_error *err) {
    char key[256];
    const int either = spec[0] == 'A' || spec[0] == 'R';
    fill_key(key, sizeof key, spec + (either ? 2 : 1), s->arch);
    if (is_dropped(s, key) || seen(key)) return ANVIL_OK;
    if (either) spec++; /* a single value of the scalar's type */
    uint32_t arr[512];
    for (size_t i = 0; i < 512; ++i) arr[i] = 4;
    switch (spec[0]) {
    case 'f': return anvil_gguf_writer_set_f32(w, key, strstr(key, "lower_bound") ? -1e-5f : 1e-5f, err);
    case 'd': return anvil_gguf_writer_set_f64(w, key, 1e-5, err);
    case 'b': return anvil_gguf_writer_set_bool(w, key, 0, err);
    case 's': return anvil_gguf_writer_set_string(w, key, "", err);
    case 'i': return anvil_gguf_writer_set_i32(w, key, 4, err);
    case 'U': return anvil_gguf_writer_set_u64(w, key, 4, err);
    case 'a': return anvil_gguf_writer_set_array(w, key, ANVIL_GGUF_TYPE_U32, arr, s->n_layer ? s->n_layer : 1, err);
    default: break;
    }
    int rc = anvil_gguf_writer_set_u32(w, key, 4, err);
    const size_t len = strlen(key);
    if (rc == ANVIL_OK && len > 13 && strcmp(key + len - 13, ".expert_count") == 0) {
        char used[280];
        snprintf(used, sizeof used, "%.*s.expert_used_count", (int)(len - 13), key);
        if (!seen(used)) rc = anvil_gguf_writer_set_u32(w, used, 2, err);
    }
    return rc;
}

static int set_u32(anvil_gguf_writer *w, const qza_spec *s, const char *fmt, uint32_t v, anvil_error *err) {
    char key[256];
    fill_key(key, sizeof key, fmt, s->arch);
    if (is_dropped(s, key) || seen(key)) return ANVIL_OK;
    return anvil_gguf_writer_set_u32(w, key, v, err);
}

static int write_keys(anvil_gguf_writer *w, const qza_spec *s, const qz_arch_row *row, anvil_error *err) {
    int rc = anvil_gguf_writer_set_string(w, "general.architecture", s->declared ? s->declared : s->arch, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.name", "anvil parity arch", err);
    if (rc == ANVIL_OK && s->n_layer > 0) rc = set_u32(w, s, "%s.block_count", s->n_layer, err);
    if (rc == ANVIL_OK) rc = set_u32(w, s, "%s.context_length", 256, err);
    if (rc == ANVIL_OK) rc = set_u32(w, s, "%s.embedding_length", QZA_EMBD, err);
    if (rc == ANVIL_OK) rc = set_u32(w, s, "%s.feed_forward_length", QZA_ROWS, err);
    if (rc == ANVIL_OK) rc = set_u32(w, s, "%s.attention.head_count", s->n_head ? s->n_head : 4, err);
    if (rc == ANVIL_OK) rc = set_u32(w, s, "%s.attention.head_count_kv", s->n_head_kv ? s->n_head_kv : 2, err);
    for (size_t i = 0; rc == ANVIL_OK && s->extra_u32 != NULL && s->extra_u32[i] != NULL; ++i) {
        const char *eq = strchr(s->extra_u32[i], '=');
        char fmt[256];
        snprintf(fmt, sizeof fmt, "%.*s", (int)(eq - s->extra_u32[i]), s->extra_u32[i]);
        rc = set_u32(w, s, fmt, (uint32_t)strtoul(eq + 1, NULL, 10), err);
    }
    for (size_t i = 0; rc == ANVIL_OK && row != NULL && row->keys[i] != NULL; ++i)
        rc = set_key(w, s, row->keys[i], err);
    return rc;
}

static int write_tensors(anvil_gguf_writer *w, qza_buf *b, const qza_spec *s, const char *const *names,
                         anvil_error *err) {
    uint64_t seed = s->seed;
    int rc = ANVIL_OK;
    for (size_t i = 0; rc == ANVIL_OK && names != NULL && names[i] != NULL; ++i) {
        const char *f = names[i];
        const char *d = strstr(f, "%d");
        if (strstr(f, "%s") != NULL || (d != NULL && strstr(d + 2, "%d") != NULL)) continue;
        const uint32_t n = d == NULL ? 1 : (s->n_layer ? s->n_layer : 2);
        for (uint32_t l = 0; rc == ANVIL_OK && l < n; ++l) {
            char name[256];
            if (d == NULL) {
                snprintf(name, sizeof name, "%s", f);
            } else {
                snprintf(name, sizeof name, "%.*s%u%s", (int)(d - f), f, l, d + 2);
            }
            if (seen(name)) continue;
            rc = add_tensor(w, b, name, s, &seed, err);
        }
    }
    return rc;
}

int qza_write_model(const char *path, const qza_spec *s, anvil_ctx *ctx) {
    const qz_arch_row *row = row_of(s->table_arch ? s->table_arch : s->arch);
    anvil_gguf_writer *w = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    qza_buf b = { NULL, 0, 0 };
    static const char *const plain[] = { "token_embd.weight",
                                         "output_norm.weight",
                                         "output.weight",
                                         "blk.%d.attn_norm.weight",
                                         "blk.%d.attn_q.weight",
                                         "blk.%d.attn_k.weight",
                                         "blk.%d.attn_v.weight",
                                         "blk.%d.attn_output.weight",
                                         "blk.%d.ffn_norm.weight",
                                         "blk.%d.ffn_gate.weight",
                                         "blk.%d.ffn_down.weight",
                                         "blk.%d.ffn_up.weight",
                                         NULL };
    const char *const *names = s->tensors                               ? s->tensors
                               : row != NULL && row->tensors[0] != NULL ? row->tensors
                                                                        : plain;
    g_seen = calloc(1, sizeof *g_seen);
    if (g_seen == NULL) return -1;
    int rc = anvil_gguf_writer_new(&w, ctx, &err);
    if (rc == ANVIL_OK) rc = write_keys(w, s, row, &err);
    if (rc == ANVIL_OK) rc = write_tensors(w, &b, s, names, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(w, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "quantize parity: %s model: %s\n", s->arch, err.message);
    anvil_gguf_writer_free(w);
    for (size_t i = 0; i < b.n; ++i) free(b.data[i]);
    free(b.data);
    free(g_seen);
    g_seen = NULL;
    return rc == ANVIL_OK ? 0 : -1;
}
