/* SPDX-License-Identifier: MIT */
/*
 * llama-quantize-oracle [--imatrix FILE] IN.gguf OUT.gguf TYPE NTHREADS
 * llama-quantize-oracle --write-imatrix IN.gguf OUT.imatrix
 *
 * llama.cpp's llama_model_quantize (libllama from the npm oracle), called
 * as llama-quantize calls it for this command line: for timing it against
 * `anvil quantize` (scripts/bench-quantize.sh) on the same model, the same
 * thread count and the same output bytes. The importance matrix is read
 * with anvil's reader and handed over as llama-quantize hands it over
 * (normalised entries plus the quantize.imatrix.* keys). --write-imatrix
 * writes a synthetic GGUF importance matrix for every weight of IN (positive
 * sums, one count per expert), for the formats that need one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "anvil/quantize.h"
#include "llama_oracle.h"

#ifndef ANVIL_DEFAULT_ORACLE_DIR
#define ANVIL_DEFAULT_ORACLE_DIR ""
#endif

static int write_imatrix(const char *in, const char *out) {
    anvil_gguf *g = NULL;
    anvil_gguf_writer *w = NULL;
    anvil_error err;
    int rc = anvil_gguf_open(&g, in, NULL, 0, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_new(&w, NULL, &err);
    const char *ds[] = { "synthetic" };
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string_array(w, "imatrix.datasets", ds, 1, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_count", 100, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_size", 512, &err);
    float **bufs = calloc(2 * anvil_gguf_tensor_count(g) + 1, sizeof *bufs);
    size_t nb = 0;
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; rc == ANVIL_OK && bufs != NULL && i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        const size_t len = strlen(t->name);
        if (t->n_dims < 2 || len < 6 || strcmp(t->name + len - 6, "weight") != 0) continue;
        const uint64_t n = t->ne[0] * t->ne[2];
        float *sums = malloc(n * sizeof *sums), *counts = malloc(t->ne[2] * sizeof *counts);
        bufs[nb++] = sums;
        bufs[nb++] = counts;
        if (sums == NULL || counts == NULL) {
            rc = ANVIL_E_NOMEM;
            break;
        }
        for (uint64_t k = 0; k < n; ++k) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            sums[k] = 512.0f * (0.05f + (float)(s >> 40) / 16777216.0f);
        }
        for (uint64_t k = 0; k < t->ne[2]; ++k) counts[k] = 512.0f;
        char name[128];
        const uint64_t ne_s[2] = { t->ne[0], t->ne[2] }, ne_c[2] = { 1, t->ne[2] };
        snprintf(name, sizeof name, "%s.in_sum2", t->name);
        rc = anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne_s, sums, n * 4, &err);
        snprintf(name, sizeof name, "%s.counts", t->name);
        if (rc == ANVIL_OK)
            rc = anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne_c, counts, t->ne[2] * 4, &err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(w, out, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "llama-quantize-oracle: %s\n", err.message);
    for (size_t i = 0; i < nb; ++i) free(bufs[i]);
    free(bufs);
    anvil_gguf_writer_free(w);
    anvil_gguf_close(g);
    return rc == ANVIL_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--write-imatrix") == 0) return write_imatrix(argv[2], argv[3]);
    const char *imatrix = NULL;
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--imatrix") == 0) {
        imatrix = argv[a + 1];
        a += 2;
    }
    if (argc - a != 4) {
        fprintf(stderr, "usage: llama-quantize-oracle [--imatrix FILE] IN.gguf OUT.gguf TYPE NTHREADS\n");
        return 2;
    }
    const anvil_quantize_preset *p = anvil_quantize_preset_find(argv[a + 2]);
    if (p == NULL) {
        fprintf(stderr, "llama-quantize-oracle: invalid TYPE '%s'\n", argv[a + 2]);
        return 2;
    }
    const char *dir = getenv("ANVIL_GGML_DIR");
    static llama_oracle lo;
    char why[2048];
    if (llama_oracle_open(&lo, dir && *dir ? dir : ANVIL_DEFAULT_ORACLE_DIR, why, sizeof why) != 0) {
        fprintf(stderr, "llama-quantize-oracle: %s\n", why);
        return 1;
    }
    lq_quantize_params q = lo.qdefaults;
    q.ftype = (int32_t)p->ftype;
    q.nthread = atoi(argv[a + 3]);
    q.only_copy = strcmp(p->name, "COPY") == 0;
    anvil_imatrix *im = NULL;
    lq_imatrix *list = NULL;
    lq_kv_override kvs[5];
    memset(kvs, 0, sizeof kvs);
    if (imatrix != NULL) {
        anvil_error err;
        if (anvil_imatrix_load(&im, imatrix, &err) != ANVIL_OK) {
            fprintf(stderr, "llama-quantize-oracle: %s\n", err.message);
            return 1;
        }
        const size_t n = anvil_imatrix_count(im);
        list = calloc(n + 1, sizeof *list);
        for (size_t i = 0; list != NULL && i < n; ++i) {
            anvil_imatrix_entry e;
            anvil_imatrix_entry_at(im, i, &e);
            list[i].name = e.name;
            list[i].data = e.values;
            list[i].size = e.n_values;
        }
        q.imatrix = list;
        size_t k = 0;
        kvs[k].tag = LQ_KV_STR;
        snprintf(kvs[k].key, sizeof kvs[k].key, "quantize.imatrix.file");
        snprintf(kvs[k].v.val_str, sizeof kvs[k].v.val_str, "%.127s", imatrix);
        k++;
        if (anvil_imatrix_dataset_count(im) > 0) {
            kvs[k].tag = LQ_KV_STR;
            snprintf(kvs[k].key, sizeof kvs[k].key, "quantize.imatrix.dataset");
            snprintf(kvs[k].v.val_str, sizeof kvs[k].v.val_str, "%.127s", anvil_imatrix_dataset_at(im, 0));
            k++;
        }
        kvs[k].tag = LQ_KV_INT;
        snprintf(kvs[k].key, sizeof kvs[k].key, "quantize.imatrix.entries_count");
        kvs[k].v.val_i64 = (int64_t)n;
        k++;
        if (anvil_imatrix_chunk_count(im) > 0) {
            kvs[k].tag = LQ_KV_INT;
            snprintf(kvs[k].key, sizeof kvs[k].key, "quantize.imatrix.chunks_count");
            kvs[k].v.val_i64 = anvil_imatrix_chunk_count(im);
        }
        q.kv_overrides = kvs;
    }
    const uint32_t rc = lo.quantize(argv[a], argv[a + 1], &q);
    if (rc != 0) {
        char last[512];
        fprintf(stderr, "llama-quantize-oracle: llama_model_quantize failed: %s\n",
                llama_oracle_log_last(&lo, last, sizeof last));
    }
    free(list);
    anvil_imatrix_free(im);
    return rc == 0 ? 0 : 1;
}
