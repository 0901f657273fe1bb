/* SPDX-License-Identifier: MIT */
#include "golden.h"

#include <stdlib.h>
#include <string.h>

static const char magic[8] = { 'A', 'N', 'V', 'I', 'L', 'G', 'D', '1' };

/* Byte regions are padded to 4 so every f32 array stays aligned. */
static size_t pad4(size_t x) { return (x + 3) & ~(size_t)3; }
static const uint8_t zeros[4];

static size_t record_size(const golden_header *h) { return 8 + (size_t)h->row_len * 4 * 2 + pad4(h->row_bytes) + 4; }

FILE *golden_write_begin(const char *path, const golden_header *h, const float *act, const void *act_q) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    int ok = fwrite(magic, 1, 8, f) == 8 && fwrite(h, sizeof *h, 1, f) == 1 &&
             fwrite(act, 4, h->row_len, f) == h->row_len &&
             (h->act_row_bytes == 0 || fwrite(act_q, 1, h->act_row_bytes, f) == h->act_row_bytes) &&
             fwrite(zeros, 1, pad4(h->act_row_bytes) - h->act_row_bytes, f) ==
                 pad4(h->act_row_bytes) - h->act_row_bytes;
    if (!ok) {
        fclose(f);
        return NULL;
    }
    return f;
}

int golden_write_record(FILE *f, const golden_header *h, uint32_t kind, uint32_t rec_flags, const float *in,
                        const void *enc, const float *dec, float dot) {
    uint32_t kf[2] = { kind, rec_flags };
    int ok = fwrite(kf, 4, 2, f) == 2 && fwrite(in, 4, h->row_len, f) == h->row_len &&
             fwrite(enc, 1, h->row_bytes, f) == h->row_bytes &&
             fwrite(zeros, 1, pad4(h->row_bytes) - h->row_bytes, f) == pad4(h->row_bytes) - h->row_bytes &&
             fwrite(dec, 4, h->row_len, f) == h->row_len && fwrite(&dot, 4, 1, f) == 1;
    return ok ? 0 : -1;
}

int golden_write_end(FILE *f) { return fclose(f) == 0 ? 0 : -1; }

int golden_read_file(const char *path, size_t min_size, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return -1;
    }
    long sz = ftell(f);
    rewind(f);
    if (sz < (long)min_size) {
        fprintf(stderr, "%s: too short for a golden file\n", path);
        fclose(f);
        return -1;
    }
    *data = malloc((size_t)sz);
    if (*data == NULL || fread(*data, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "%s: read failed\n", path);
        fclose(f);
        free(*data);
        *data = NULL;
        return -1;
    }
    fclose(f);
    *size = (size_t)sz;
    return 0;
}

int golden_load(const char *path, golden_file *g) {
    memset(g, 0, sizeof *g);
    if (golden_read_file(path, 8 + sizeof(golden_header), &g->data, &g->size) != 0) {
        return -1;
    }
    if (memcmp(g->data, magic, 8) != 0) {
        fprintf(stderr, "%s: bad magic\n", path);
        golden_free(g);
        return -1;
    }
    memcpy(&g->h, g->data + 8, sizeof g->h);
    g->rec_size = record_size(&g->h);
    const size_t act_off = 8 + sizeof g->h;
    g->first_rec = act_off + (size_t)g->h.row_len * 4 + pad4(g->h.act_row_bytes);
    if (g->first_rec + g->rec_size * g->h.n_rows != g->size) {
        fprintf(stderr, "%s: size %zu does not match header (%u rows)\n", path, g->size, g->h.n_rows);
        golden_free(g);
        return -1;
    }
    g->act = (const float *)(g->data + act_off);
    g->act_q = g->data + act_off + (size_t)g->h.row_len * 4;
    return 0;
}

void golden_record_at(const golden_file *g, size_t i, golden_record *r) {
    const uint8_t *p = g->data + g->first_rec + i * g->rec_size;
    memcpy(&r->kind, p, 4);
    memcpy(&r->flags, p + 4, 4);
    r->in = (const float *)(p + 8);
    r->enc = p + 8 + (size_t)g->h.row_len * 4;
    r->dec = (const float *)(r->enc + pad4(g->h.row_bytes));
    memcpy(&r->dot, (const uint8_t *)r->dec + (size_t)g->h.row_len * 4, 4);
}

void golden_free(golden_file *g) {
    free(g->data);
    memset(g, 0, sizeof *g);
}
