/* SPDX-License-Identifier: MIT */
#include "golden_imatrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/status.h"

#include "golden.h"
#include "inputs.h"

static const char magic[8] = { 'A', 'N', 'V', 'I', 'L', 'I', 'M', '1' };
static const uint8_t zeros[4];

static size_t pad4(size_t x) { return (x + 3) & ~(size_t)3; }

static size_t record_size(const golden_imx_header *h) { return 8 + (size_t)h->n_per_row * 4 + pad4(h->row_bytes); }

FILE *golden_imx_write_begin(const char *path, const golden_imx_header *h, const float *imatrix) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    const size_t nw = (size_t)h->n_imatrix * h->n_per_row;
    if (fwrite(magic, 1, 8, f) != 8 || fwrite(h, sizeof *h, 1, f) != 1 || fwrite(imatrix, 4, nw, f) != nw) {
        fclose(f);
        return NULL;
    }
    return f;
}

int golden_imx_write_record(FILE *f, const golden_imx_header *h, uint32_t kind, uint32_t imatrix_index,
                            const float *in, const void *enc) {
    const uint32_t head[2] = { kind, imatrix_index };
    const size_t pad = pad4(h->row_bytes) - h->row_bytes;
    const int ok = fwrite(head, 4, 2, f) == 2 && fwrite(in, 4, h->n_per_row, f) == h->n_per_row &&
                   fwrite(enc, 1, h->row_bytes, f) == h->row_bytes && fwrite(zeros, 1, pad, f) == pad;
    return ok ? 0 : -1;
}

int golden_imx_write_end(FILE *f) { return fclose(f) == 0 ? 0 : -1; }

int golden_imx_load(const char *path, golden_imx_file *g) {
    memset(g, 0, sizeof *g);
    if (golden_read_file(path, 8 + sizeof(golden_imx_header), &g->data, &g->size) != 0) {
        return -1;
    }
    if (memcmp(g->data, magic, 8) != 0) {
        fprintf(stderr, "%s: bad magic (not an importance-matrix golden file)\n", path);
        golden_imx_free(g);
        return -1;
    }
    memcpy(&g->h, g->data + 8, sizeof g->h);
    g->first_imatrix = 8 + sizeof g->h;
    g->first_rec = g->first_imatrix + (size_t)g->h.n_imatrix * g->h.n_per_row * 4;
    g->rec_size = record_size(&g->h);
    if (g->h.n_per_row == 0 || g->first_rec + g->rec_size * g->h.n_records != g->size) {
        fprintf(stderr, "%s: size %zu does not match its header (%u records)\n", path, g->size, g->h.n_records);
        golden_imx_free(g);
        return -1;
    }
    return 0;
}

void golden_imx_record_at(const golden_imx_file *g, size_t i, golden_imx_record *r) {
    const uint8_t *p = g->data + g->first_rec + i * g->rec_size;
    memcpy(&r->kind, p, 4);
    memcpy(&r->imatrix_index, p + 4, 4);
    r->in = (const float *)(p + 8);
    r->enc = p + 8 + (size_t)g->h.n_per_row * 4;
    r->imatrix = r->imatrix_index < g->h.n_imatrix
                     ? (const float *)(g->data + g->first_imatrix + (size_t)r->imatrix_index * g->h.n_per_row * 4)
                     : NULL;
}

void golden_imx_free(golden_imx_file *g) {
    free(g->data);
    memset(g, 0, sizeof *g);
}

long golden_imx_check(const char *path, uint32_t type_id, anvil_encode_rows_fn encode_rows, size_t *checked) {
    *checked = 0;
    golden_imx_file g;
    if (golden_imx_load(path, &g) != 0) {
        return -1;
    }
    if (g.h.type_id != type_id || encode_rows == NULL) {
        fprintf(stderr, "%s: holds type %u (%.16s), expected %u%s\n", path, g.h.type_id, g.h.type_name, type_id,
                encode_rows == NULL ? " with a row encoder" : "");
        golden_imx_free(&g);
        return -1;
    }
    uint8_t *enc = malloc(g.h.row_bytes ? g.h.row_bytes : 1);
    if (enc == NULL) {
        golden_imx_free(&g);
        return -1;
    }
    long bad = 0;
    for (size_t i = 0; i < g.h.n_records; ++i) {
        golden_imx_record r;
        golden_imx_record_at(&g, i, &r);
        memset(enc, 0xA5, g.h.row_bytes);
        char msg[256] = "";
        const int rc = encode_rows(r.in, enc, 1, g.h.n_per_row, r.imatrix, msg, sizeof msg);
        size_t at = 0;
        while (rc == 0 && at < g.h.row_bytes && enc[at] == r.enc[at]) {
            ++at;
        }
        ++*checked;
        if (rc != 0 || at != g.h.row_bytes) {
            ++bad;
            fprintf(stderr, "\n  %.16s imatrix golden record %zu (%s, imatrix %u): %s byte %zu\n", g.h.type_name, i,
                    test_input_kind_name((test_input_kind)r.kind), r.imatrix_index,
                    rc != 0 ? msg : "differs from ggml at", at);
        }
    }
    free(enc);
    golden_imx_free(&g);
    return bad;
}

static int contract_fail(const char *name, const char *what, const char *msg) {
    fprintf(stderr, "\n  %s encode_rows: %s%s%s\n", name, what, msg ? ": " : "", msg ? msg : "");
    return 1;
}

int imatrix_contract_check(const char *name, size_t block_elems, size_t block_bytes, anvil_encode_fn encode,
                           anvil_encode_rows_fn encode_rows, int uses_imatrix) {
    enum { ROWS = 3 };
    const size_t npr = 2 * block_elems;
    const size_t row_bytes = 2 * block_bytes;
    float *x = malloc(ROWS * npr * sizeof *x);
    float *w = malloc(npr * sizeof *w);
    uint8_t *a = malloc(ROWS * row_bytes);
    uint8_t *b = malloc(ROWS * row_bytes);
    if (x == NULL || w == NULL || a == NULL || b == NULL) {
        free(x);
        free(w);
        free(a);
        free(b);
        return contract_fail(name, "out of memory", NULL);
    }
    int fails = 0;
    char msg[256];
    test_input_fill(x, ROWS * npr, INPUT_LLM_LIKE, 77, 1);
    test_rng r;
    test_rng_seed(&r, 99);
    for (size_t j = 0; j < npr; ++j) {
        w[j] = expf(2.0f * test_rng_normal(&r));
    }

    /* No importance matrix: the plain encoder's bytes; or, for a format
     * ggml encodes only with one (no plain encoder), a refusal that says so
     * and, as the bytes to differ from, all-ones weights. */
    memset(a, 0x5A, ROWS * row_bytes);
    memset(b, 0xA5, ROWS * row_bytes);
    if (encode == NULL) {
        for (size_t j = 0; j < npr; ++j) {
            w[j] = 1.0f;
        }
        if (encode_rows(x, b, ROWS, npr, NULL, msg, sizeof msg) != ANVIL_E_NEEDS_IMATRIX ||
            strstr(msg, "importance matrix") == NULL) {
            fails += contract_fail(name, "rows without the importance matrix it needs were not refused", msg);
        }
        if (encode_rows(x, a, ROWS, npr, w, msg, sizeof msg) != ANVIL_OK) {
            fails += contract_fail(name, "rows with all-ones weights refused", msg);
        }
        for (size_t j = 0; j < npr; ++j) {
            w[j] = expf(2.0f * test_rng_normal(&r));
        }
    } else if (encode(x, a, ROWS * npr, msg, sizeof msg) != ANVIL_OK ||
               encode_rows(x, b, ROWS, npr, NULL, msg, sizeof msg) != ANVIL_OK) {
        fails += contract_fail(name, "plain rows refused", msg);
    } else if (memcmp(a, b, ROWS * row_bytes) != 0) {
        fails += contract_fail(name, "rows without imatrix differ from encode", NULL);
    }

    /* With one: used, or ignored as ggml ignores it. */
    memset(b, 0xA5, ROWS * row_bytes);
    if (encode_rows(x, b, ROWS, npr, w, msg, sizeof msg) != ANVIL_OK) {
        fails += contract_fail(name, "weighted rows refused", msg);
    } else if ((memcmp(a, b, ROWS * row_bytes) != 0) != (uses_imatrix != 0)) {
        fails += contract_fail(name,
                               uses_imatrix ? "an importance matrix changed nothing"
                                            : "an importance matrix it should ignore changed the bytes",
                               NULL);
    }

    /* Refusals. */
    if (encode_rows(x, b, 1, npr + 1, NULL, msg, sizeof msg) != ANVIL_E_BLOCK_MISMATCH) {
        fails += contract_fail(name, "a partial block was not refused", NULL);
    }
    /* (a negative weight is ggml's to take as given: llama.cpp passes them on) */
    w[2] = INFINITY;
    if (encode_rows(x, b, ROWS, npr, w, msg, sizeof msg) != ANVIL_E_INVALID_ARG || strstr(msg, "column 2") == NULL) {
        fails += contract_fail(name, "an infinite weight was not refused naming column 2", msg);
    }
    w[2] = NAN;
    if (encode_rows(x, b, ROWS, npr, w, msg, sizeof msg) != ANVIL_E_INVALID_ARG) {
        fails += contract_fail(name, "a NaN weight was not refused", msg);
    }
    w[2] = 1.0f;
    x[npr + 3] = NAN;
    if (encode_rows(x, b, ROWS, npr, w, msg, sizeof msg) != ANVIL_E_NONFINITE ||
        strstr(msg, "row 1 element 3") == NULL) {
        fails += contract_fail(name, "NaN input was not refused naming row 1 element 3", msg);
    }
    free(x);
    free(w);
    free(a);
    free(b);
    return fails;
}

static int codec_check(const anvil_codec *c, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, c->name);
    size_t checked = 0;
    const long bad = golden_imx_check(path, c->type_id, c->encode_rows, &checked);
    int fails = bad != 0 ? 1 : 0;
    if (checked != 32) {
        fprintf(stderr, "\n  %s: %zu imatrix golden records checked, 32 expected\n", c->name, checked);
        ++fails;
    }
    /* A format that needs a matrix has no plain encoder: its `encode`, if
     * any, is a refusal (checked here), never the bytes to compare with. */
    const int needs = (c->flags & ANVIL_CODEC_NEEDS_IMATRIX) != 0;
    if (needs && c->encode != NULL) {
        static const float zero[4096];
        static unsigned char out[4096];
        char msg[512] = "";
        const size_t n = c->block_elems <= 4096 && c->block_bytes <= 4096 ? c->block_elems : 0;
        if (n == 0 || c->encode(zero, out, n, msg, sizeof msg) != ANVIL_E_NEEDS_IMATRIX ||
            strstr(msg, "importance matrix") == NULL) {
            fails += contract_fail(c->name,
                                   "the plain encode of a format that needs an importance matrix "
                                   "did not refuse with ANVIL_E_NEEDS_IMATRIX",
                                   msg);
        }
    }
    return fails + imatrix_contract_check(c->name, c->block_elems, c->block_bytes, needs ? NULL : c->encode,
                                          c->encode_rows, (c->flags & ANVIL_CODEC_IMATRIX_UNUSED) == 0);
}

int imatrix_plugin_check(const anvil_plugin_desc *d, const char *dir, size_t *n_codecs) {
    *n_codecs = 0;
    if (d == NULL) {
        return 1;
    }
    int fails = 0;
    for (size_t i = 0; i < d->n_codecs; ++i) {
        if (d->codecs[i]->encode_rows != NULL) {
            fails += codec_check(d->codecs[i], dir);
            ++*n_codecs;
        }
    }
    return fails;
}
