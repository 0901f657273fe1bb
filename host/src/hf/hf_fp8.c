/* SPDX-License-Identifier: MIT */
/*
 * hf_fp8: block-scaled FP8 checkpoints (DeepSeek-V3 / Qwen3-FP8 style:
 * quantization_config {"quant_method": "fp8", "weight_block_size": [128,
 * 128]}, F8_E4M3 weights, F32/BF16 "<name>_scale_inv" tensors), as
 * convert_hf_to_gguf.py's dequant_model / dequant_simple reads them: each
 * weight becomes weight.float() * scale, the scale repeated over its block
 * and cut to the weight's shape, computed in float32; the *_scale_inv and
 * activation-scale tensors are dropped. hf_reader (also for the float
 * dtypes) hands any checkpoint tensor out row by row. A F32/F16/BF16
 * weight that has a *_scale_inv is scaled too, as dequant_simple scales
 * every weight that has one. Without a block size the scale is
 * one value or one per row. A FP8 weight without its scale, a scale without
 * its weight, or scale dims that do not cover the weight are refused by
 * name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "error.h"
#include "hf_internal.h"

static int block_size(hf_folder *f, const anvil_json_value *q, anvil_error *err) {
    const anvil_json_value *bs = anvil__json_get(q, "weight_block_size");
    if (anvil__json_is_null(bs)) return ANVIL_OK;
    int64_t a = 0, b = 0;
    if (bs->kind != ANVIL_JSON_ARRAY_BEGIN || bs->n_items != 2 || anvil__json_i64(bs->items[0], &a) != 0 ||
        anvil__json_i64(bs->items[1], &b) != 0 || a <= 0 || b <= 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/config.json: weight_block_size must be two positive "
                                "whole numbers",
                                f->dir);
    }
    f->fp8_block[0] = (uint64_t)a;
    f->fp8_block[1] = (uint64_t)b;
    return ANVIL_OK;
}

static int check_scale(const hf_folder *f, const hf_src_tensor *w, const anvil_st_tensor *s, anvil_error *err) {
    const anvil_st_tensor *t = w->st;
    int ok = s->dtype == ANVIL_ST_F32 || s->dtype == ANVIL_ST_BF16 || s->dtype == ANVIL_ST_F16;
    if (ok && f->fp8_block[0] != 0) {
        /* repeat_interleave then cut: the blocks must cover the weight */
        ok = t->rank == 2 && s->rank == 2 && s->shape[0] * f->fp8_block[0] >= t->shape[0] &&
             s->shape[1] * f->fp8_block[1] >= t->shape[1];
    } else if (ok) {
        ok = s->n_elements == 1 || (s->rank == 1 && t->rank >= 1 && s->shape[0] == t->shape[0]);
    }
    if (ok) return ANVIL_OK;
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s/%s: scale \"%s_scale_inv\" (%s, %zu dims) does not fit weight "
                            "\"%s\" with block size [%llu, %llu]",
                            f->dir, f->part_names[w->part], w->name, anvil_st_dtype_name(s->dtype), s->rank, w->name,
                            (unsigned long long)f->fp8_block[0], (unsigned long long)f->fp8_block[1]);
}

typedef struct name_at {
    const char *name;
    size_t i;
} name_at;

static int cmp_name_at(const void *a, const void *b) {
    return strcmp(((const name_at *)a)->name, ((const name_at *)b)->name);
}

/* Each *_scale_inv onto its weight (found in a sorted copy of the names:
 * O(n log n)); the scales and activation scales then dropped in one pass. */
static int pair_scales(hf_folder *f, anvil_error *err) {
    const size_t n = f->n_tensors;
    name_at *by = malloc((n + 1) * sizeof *by);
    unsigned char *gone = calloc(n + 1, 1);
    int rc = by == NULL || gone == NULL ? anvil__nomem(err) : ANVIL_OK;
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) by[i] = (name_at){ f->tensors[i].name, i };
    if (rc == ANVIL_OK && n > 0) qsort(by, n, sizeof *by, cmp_name_at);
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_ends_with(nm, ".activation_scale") || hf_ends_with(nm, "_activation_scale")) gone[i] = 1;
        if (!hf_ends_with(nm, "_scale_inv")) continue;
        const size_t wl = strlen(nm) - strlen("_scale_inv");
        char *key = strndup(nm, wl);
        if (key == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        const name_at k = { key, 0 };
        const name_at *hit = bsearch(&k, by, n, sizeof *by, cmp_name_at);
        free(key);
        if (hit == NULL) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s/%s: scale \"%s\" has no weight \"%.*s\"", f->dir,
                                  f->part_names[f->tensors[i].part], nm, (int)wl, nm);
            break;
        }
        rc = check_scale(f, &f->tensors[hit->i], f->tensors[i].st, err);
        if (rc == ANVIL_OK) f->tensors[hit->i].scale = f->tensors[i].st;
        gone[i] = 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        if (gone[i]) free(f->tensors[i].name);
        else f->tensors[k++] = f->tensors[i];
    }
    if (rc == ANVIL_OK) f->n_tensors = k;
    free(by);
    free(gone);
    return rc;
}

int hf_fp8_pair(hf_folder *f, anvil_error *err) {
    const anvil_json_value *q = anvil__json_get(f->config, "quantization_config");
    const char *method = anvil__json_str(anvil__json_get(q, "quant_method"));
    int rc = ANVIL_OK;
    if (method != NULL && strcmp(method, "fp8") == 0) {
        rc = block_size(f, q, err);
        if (rc == ANVIL_OK) rc = pair_scales(f, err);
    }
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const anvil_st_dtype d = f->tensors[i].st->dtype;
        if ((d == ANVIL_ST_F8_E4M3 || d == ANVIL_ST_F8_E5M2) && f->tensors[i].scale == NULL) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                  "%s/%s: FP8 weight \"%s\" has no \"%s_scale_inv\" (and "
                                  "config.json no fp8 quantization_config): it cannot be dequantized",
                                  f->dir, f->part_names[f->tensors[i].part], f->tensors[i].name, f->tensors[i].name);
        }
    }
    return rc;
}

/* torch's float8_e4m3fn: bias 7, no infinities, S.1111.111 is NaN. */
static float e4m3fn(uint8_t x) {
    const uint32_t s = (uint32_t)(x & 0x80) << 24, e = (x >> 3) & 0xF, m = x & 7;
    if (e == 15 && m == 7) return NAN;
    if (e == 0) return anvil_f32_from_bits(s | anvil_f32_to_bits((float)m * 0x1.0p-9f));
    return anvil_f32_from_bits(s | ((e + 120) << 23) | (m << 20));
}

/* float8_e5m2: the top byte of an IEEE half. */
static float e5m2(uint8_t x) { return anvil_fp16_to_fp32((anvil_half)((uint16_t)x << 8)); }

int hf_reader_open(hf_reader *rd, const hf_folder *f, const hf_src_tensor *s, anvil_error *err) {
    memset(rd, 0, sizeof *rd);
    rd->f = f;
    rd->s = s;
    const anvil_st_tensor *t = s->st;
    rd->rows = t->rank >= 1 ? t->shape[0] : 1;
    rd->row_len = rd->rows ? t->n_elements / rd->rows : 0;
    /* the 256 FP8 values, looked up rather than decoded per element */
    if (t->dtype == ANVIL_ST_F8_E4M3)
        for (int v = 0; v < 256; ++v) rd->lut[v] = e4m3fn((uint8_t)v);
    else if (t->dtype == ANVIL_ST_F8_E5M2)
        for (int v = 0; v < 256; ++v) rd->lut[v] = e5m2((uint8_t)v);
    if (s->scale == NULL) return ANVIL_OK;
    rd->scale = malloc((size_t)s->scale->n_elements * sizeof *rd->scale + 1);
    if (rd->scale == NULL) return anvil__nomem(err);
    return anvil_st_tensor_to_f32(s->scale, rd->scale, s->scale->n_elements, err);
}

void hf_reader_close(hf_reader *rd) {
    free(rd->scale);
    rd->scale = NULL;
}

/* n values from flat element `at` as f32, unscaled. */
static void decode(const hf_reader *rd, uint64_t at, uint64_t n, float *dst) {
    const anvil_st_tensor *t = rd->s->st;
    const uint8_t *w = (const uint8_t *)t->data;
    switch (t->dtype) {
    case ANVIL_ST_F32: memcpy(dst, w + at * 4, n * sizeof(float)); break;
    case ANVIL_ST_F16:
        for (uint64_t c = 0; c < n; ++c) {
            uint16_t h;
            memcpy(&h, w + (at + c) * 2, 2);
            dst[c] = anvil_fp16_to_fp32(h);
        }
        break;
    case ANVIL_ST_BF16:
        for (uint64_t c = 0; c < n; ++c) {
            uint16_t h;
            memcpy(&h, w + (at + c) * 2, 2);
            dst[c] = anvil_bf16_to_fp32(h);
        }
        break;
    default:
        for (uint64_t c = 0; c < n; ++c) dst[c] = rd->lut[w[at + c]];
        break;
    }
}

/* dequant_simple scales every weight that has a scale, whatever its
 * dtype: weight.float() * scale, in float32. dst holds columns [c0, c0 + n)
 * of row `row`. */
static void scale_run(const hf_reader *rd, uint64_t row, uint64_t c0, uint64_t n, float *dst) {
    const anvil_st_tensor *sc = rd->s->scale;
    const uint64_t *blk = rd->f->fp8_block;
    if (blk[0] == 0) {
        const float k = sc->n_elements == 1 ? rd->scale[0] : rd->scale[row];
        for (uint64_t c = 0; c < n; ++c) dst[c] *= k;
        return;
    }
    const float *ks = rd->scale + (row / blk[0]) * sc->shape[1];
    for (uint64_t c = 0; c < n;) {
        const uint64_t col = c0 + c, end = (col / blk[1] + 1) * blk[1] - c0;
        const uint64_t stop = end < n ? end : n;
        const float k = ks[col / blk[1]];
        for (; c < stop; ++c) dst[c] *= k;
    }
}

void hf_reader_span(const hf_reader *rd, uint64_t at, uint64_t n, float *dst) {
    decode(rd, at, n, dst);
    if (rd->s->scale == NULL || n == 0) return;
    const uint64_t L = rd->row_len;
    for (uint64_t done = 0; done < n;) {
        const uint64_t row = (at + done) / L, c = (at + done) % L;
        const uint64_t take = L - c < n - done ? L - c : n - done;
        scale_run(rd, row, c, take, dst + done);
        done += take;
    }
}

/* Row `row` (row_len values) as f32: F32/F16/BF16 decoded exactly, FP8
 * times its block scale in float32 (dequant_simple). */
void hf_reader_row(const hf_reader *rd, uint64_t row, float *dst) {
    hf_reader_span(rd, row * rd->row_len, rd->row_len, dst);
}
