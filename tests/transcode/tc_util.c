/* SPDX-License-Identifier: MIT */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "synth_model.h"
#include "tc_test.h"
#include "test_env.h"

static anvil_ctx *g_ctx;

anvil_ctx *tc_ctx(void) {
    if (g_ctx == NULL) {
        anvil_error err;
        if (anvil_ctx_open(&g_ctx, test_config_path(), &err) != ANVIL_OK) {
            fprintf(stderr, "cannot open the test config: %s\n", err.message);
            exit(2);
        }
    }
    return g_ctx;
}

void tc_ctx_release(void) {
    anvil_ctx_close(g_ctx);
    g_ctx = NULL;
}

const char *tc_path(const char *name) {
    static char bufs[16][4200];
    static unsigned next;
    char *b = bufs[next++ % 16];
    snprintf(b, sizeof bufs[0], "%s/%s", test_tmpdir(), name);
    return b;
}

static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t tc_spec_elements(const tc_spec *s) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < s->n_dims; ++d) n *= s->ne[d];
    return n;
}

void tc_spec_values(const tc_spec *s, float *out, size_t n) {
    uint64_t st = s->seed * 7919u + 17u;
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = mix(&st);
        const double u =
            (double)(r & 0xffff) + (double)((r >> 16) & 0xffff) + (double)((r >> 32) & 0xffff) + (double)(r >> 48);
        out[i] = (float)((u / 65536.0 - 2.0) * 0.05);
        if ((r & 0xff00) == 0) out[i] *= 6.0f; /* a few outliers */
    }
    if (s->nan_at >= 0 && (size_t)s->nan_at < n) out[s->nan_at] = NAN;
}

int tc_write_model(const char *path, const tc_spec *specs, size_t n) {
    anvil_ctx *ctx = tc_ctx();
    anvil_error err;
    anvil_gguf_writer *w = NULL;
    void **bufs = calloc(n + 1, sizeof *bufs);
    int rc = anvil_gguf_writer_new(&w, ctx, &err);
    const float arr[3] = { 1.0f, 2.5f, -3.0f };
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.architecture", "llama", &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.name", "tc test", &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u8(w, "test.u8", 7, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_bool(w, "test.flag", 1, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_array(w, "test.arr", ANVIL_GGUF_TYPE_F32, arr, 3, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", 1, &err);
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        const tc_spec *s = &specs[i];
        const uint64_t ne = tc_spec_elements(s);
        anvil_type_info ti;
        uint64_t bytes = 0;
        rc = anvil_type_lookup(ctx, s->type, &ti, &err);
        if (rc == ANVIL_OK) rc = anvil_type_bytes(&ti, ne, &bytes, &err);
        if (rc != ANVIL_OK) break;
        bufs[i] = malloc(bytes ? (size_t)bytes : 1);
        if (s->type == ANVIL_TYPE_I32) {
            for (uint64_t k = 0; k < ne; ++k) ((int32_t *)bufs[i])[k] = (int32_t)(k * 3);
        } else {
            float *x = malloc(ne ? (size_t)ne * sizeof *x : 4);
            tc_spec_values(s, x, (size_t)ne);
            rc = anvil_encode(ctx, s->type, x, (size_t)ne, bufs[i], (size_t)bytes, &err);
            free(x);
        }
        if (rc == ANVIL_OK)
            rc = anvil_gguf_writer_add_tensor(w, s->name, s->type, s->n_dims, s->ne, bufs[i], bytes, &err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(w, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "tc_write_model: %s\n", err.message);
    anvil_gguf_writer_free(w);
    for (size_t i = 0; i < n; ++i) free(bufs[i]);
    free(bufs);
    return rc;
}

int tc_write_synth(const char *path, uint32_t type, uint64_t seed) {
    const synth_model m = { .n_vocab = 512,
                            .n_embd = 256,
                            .n_ff = 512,
                            .n_layer = 2,
                            .n_head = 4,
                            .n_head_kv = 2,
                            .type = type,
                            .seed = seed,
                            .name = NULL };
    anvil_error err;
    const int rc = synth_model_write(path, &m, tc_ctx(), &err);
    if (rc != ANVIL_OK) fprintf(stderr, "tc_write_synth: %s\n", err.message);
    return rc;
}

tc_result tc_transcode(const char *in, const char *out, const anvil_transcode_options *o, int dry_run) {
    tc_result r;
    memset(&r, 0, sizeof r);
    r.rc = anvil_gguf_open(&r.src, in, tc_ctx(), 0, &r.err);
    if (r.rc == ANVIL_OK) r.rc = anvil_transcode_plan(&r.t, tc_ctx(), r.src, out, o, &r.err);
    if (r.rc == ANVIL_OK && !dry_run) r.rc = anvil_transcode_run(r.t, &r.err);
    return r;
}

void tc_result_free(tc_result *r) {
    anvil_transcode_free(r->t);
    anvil_gguf_close(r->src);
    memset(r, 0, sizeof *r);
}

const anvil_transcode_tensor *tc_find(const anvil_transcode *t, const char *name) {
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        if (strcmp(anvil_transcode_tensor_at(t, i)->name, name) == 0) return anvil_transcode_tensor_at(t, i);
    }
    return NULL;
}

unsigned char *tc_read(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b != NULL && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

float *tc_decode(const anvil_gguf_tensor *t) {
    float *x = malloc(t->n_elements ? (size_t)t->n_elements * sizeof *x : 4);
    if (anvil_decode(tc_ctx(), t->type, t->data, (size_t)t->n_bytes, x, (size_t)t->n_elements, NULL) != ANVIL_OK) {
        free(x);
        return NULL;
    }
    return x;
}
