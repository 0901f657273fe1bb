/* SPDX-License-Identifier: MIT */
/*
 * Purpose-built plugins for the ABI tests: one source, compiled once per
 * case (ABI_CASE_*), each exercising one rule of the plugin contract.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"

/* ---- a tiny third-party codec: 32 int8 codes and an f32 scale ---------- */
#define TP_BLOCK 32
typedef struct {
    float d;
    int8_t q[TP_BLOCK];
} tp_block;

static int tp_encode(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    if (n % TP_BLOCK != 0) {
        snprintf(msg, msg_size, "tp_i8: %zu is not a multiple of %d", n, TP_BLOCK);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    tp_block *b = dst;
    for (size_t i = 0; i < n / TP_BLOCK; ++i) {
        float amax = 0;
        for (int j = 0; j < TP_BLOCK; ++j) {
            if (!isfinite(src[i * TP_BLOCK + j])) {
                snprintf(msg, msg_size, "tp_i8: element %zu is not finite", i * TP_BLOCK + j);
                return ANVIL_E_NONFINITE;
            }
            amax = fmaxf(amax, fabsf(src[i * TP_BLOCK + j]));
        }
        b[i].d = amax / 127.0f;
        const float id = amax > 0 ? 127.0f / amax : 0.0f;
        for (int j = 0; j < TP_BLOCK; ++j) b[i].q[j] = (int8_t)lrintf(src[i * TP_BLOCK + j] * id);
    }
    return ANVIL_OK;
}

static void tp_decode(const void *src, float *dst, size_t n) {
    const tp_block *b = src;
    for (size_t i = 0; i < n / TP_BLOCK; ++i) {
        for (int j = 0; j < TP_BLOCK; ++j) dst[i * TP_BLOCK + j] = b[i].d * (float)b[i].q[j];
    }
}

/* Reference dot against f32 activations: the host's fallback path uses it
 * when no backend knows this format. */
static void tp_dot(size_t n, float *s, const void *w, const void *a) {
    const tp_block *b = w;
    const float *x = a;
    double sum = 0;
    for (size_t i = 0; i < n / TP_BLOCK; ++i) {
        double bs = 0;
        for (int j = 0; j < TP_BLOCK; ++j) bs += (double)b[i].q[j] * x[i * TP_BLOCK + j];
        sum += bs * b[i].d;
    }
    *s = (float)sum;
}

#ifndef ABI_TYPE_ID
#define ABI_TYPE_ID 1030
#endif
#ifndef ABI_TYPE_NAME
#define ABI_TYPE_NAME "tp_i8"
#endif

static const anvil_codec tp_codec = {
    .struct_size = sizeof(anvil_codec),
    .type_id = ABI_TYPE_ID,
    .name = ABI_TYPE_NAME,
    .family = "abi-test",
    .block_elems = TP_BLOCK,
    .block_bytes = sizeof(tp_block),
    .act_type = ANVIL_TYPE_F32,
    .encode = tp_encode,
    .decode = tp_decode,
    .ref_vec_dot = tp_dot,
};

#if defined(ABI_CASE_DUP_TYPE)
/* Claims q4_0 (id 2) with ggml's geometry: clashes with codec-q8_0. */
static void q4_decode(const void *src, float *dst, size_t n) {
    (void)src;
    memset(dst, 0, n * sizeof *dst);
}
static const anvil_codec dup_codec = {
    .struct_size = sizeof(anvil_codec),
    .type_id = 2,
    .name = "q4_0",
    .family = "abi-test",
    .block_elems = 32,
    .block_bytes = 18,
    .act_type = ANVIL_TYPE_Q8_0,
    .decode = q4_decode,
};
static const anvil_codec *const codecs[] = { &dup_codec };
#else
static const anvil_codec *const codecs[] = { &tp_codec };
#endif

/* ---- a backend that cannot run anywhere -------------------------------- */
static uint32_t never_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    (void)cpu;
    snprintf(why, why_size, "needs the imaginary QUANTUM-9 extension, absent on this CPU");
    return 0;
}
static const anvil_backend never_backend = {
    .struct_size = sizeof(anvil_backend),
    .name = "never",
    .description = "scores 0",
    .score = never_score,
};
static const anvil_backend *const backends[] = { &never_backend };

#if defined(ABI_CASE_PACK_BACKEND)
/* A backend with a packed layout for tp_i8: groups of 4 rows, block-major
 * (block b of rows r..r+3 are adjacent), to exercise the host's packing path. */
#define PACK_ROWS 4
static size_t pk_size(size_t n, size_t nrows) {
    return ((nrows + PACK_ROWS - 1) / PACK_ROWS) * PACK_ROWS * (n / TP_BLOCK) * sizeof(tp_block);
}
static int pk_pack(const void *w, size_t w_stride, size_t n, size_t nrows, void *dst, size_t dst_size) {
    if (dst_size < pk_size(n, nrows)) return ANVIL_E_BUFFER_TOO_SMALL;
    const size_t nb = n / TP_BLOCK;
    tp_block *out = dst;
    memset(dst, 0, dst_size);
    for (size_t r = 0; r < nrows; ++r) {
        const tp_block *row = (const tp_block *)((const char *)w + r * w_stride);
        for (size_t b = 0; b < nb; ++b) out[((r / PACK_ROWS) * nb + b) * PACK_ROWS + r % PACK_ROWS] = row[b];
    }
    return ANVIL_OK;
}
static void pk_gemm_packed(size_t n, size_t nrows, size_t r0, size_t r1, size_t m, float *y, size_t y_stride,
                           const void *packed, const void *a, size_t a_stride) {
    (void)nrows;
    const size_t nb = n / TP_BLOCK;
    const tp_block *p = packed;
    for (size_t i = 0; i < m; ++i) {
        const float *x = (const float *)((const char *)a + i * a_stride);
        for (size_t r = r0; r < r1; ++r) {
            /* accumulate in a different order than tp_dot (float, reversed) */
            float sum = 0;
            for (size_t b = nb; b-- > 0;) {
                const tp_block *blk = &p[((r / PACK_ROWS) * nb + b) * PACK_ROWS + r % PACK_ROWS];
                float bs = 0;
                for (int j = 0; j < TP_BLOCK; ++j) bs += (float)blk->q[j] * x[b * TP_BLOCK + j];
                sum += bs * blk->d;
            }
            y[i * y_stride + r] = sum;
        }
    }
}
static const anvil_kernel pk_kernel = {
    .struct_size = sizeof(anvil_kernel),
    .weight_type = ABI_TYPE_ID,
    .act_type = ANVIL_TYPE_F32,
    .pack_rows = PACK_ROWS,
    .variant = "packtest",
    .vec_dot = tp_dot,
    .packed_size = pk_size,
    .pack = pk_pack,
    .gemm_packed = pk_gemm_packed,
};
static const anvil_kernel *const pk_kernels[] = { &pk_kernel };
/* Built twice: as "packtest" (score 5) and, for the ranking test, as
 * "ranktest" with another score (ABI_BACKEND_NAME, ABI_BACKEND_SCORE). */
#ifndef ABI_BACKEND_NAME
#define ABI_BACKEND_NAME "packtest"
#endif
#ifndef ABI_BACKEND_SCORE
#define ABI_BACKEND_SCORE 5
#endif
static uint32_t pk_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    (void)cpu;
    snprintf(why, why_size, "test backend");
    return ABI_BACKEND_SCORE;
}
static const anvil_backend pk_backend = {
    .struct_size = sizeof(anvil_backend),
    .name = ABI_BACKEND_NAME,
    .score = pk_score,
    .n_kernels = 1,
    .kernels = pk_kernels,
};
static const anvil_backend *const pk_backends[] = { &pk_backend };
#endif

#if defined(ABI_CASE_ENCODER_BACKEND) || defined(ABI_CASE_BAD_ENCODER) || defined(ABI_CASE_DUP_ENCODER)
/* Weight encoders (ABI 1.1): three codecs of the tp_i8 layout, tp_enc (with
 * a weighted encode_rows), tp_enc2 and tp_enc3 (whose imatrix ggml would
 * ignore), and a backend "enctest" with a WEIGHTED encoder for tp_enc (plus
 * a flag bit no host knows, which the host must drop) and plain ones for
 * the other two. Same bytes as the codec; calls are
 * counted in abi_enc_calls (read by the test through dlsym):
 *   [0] enctest's encoders without, [1] with an importance matrix,
 *   [2] the codec's encode_rows. */
ANVIL_PLUGIN_EXPORT unsigned abi_enc_calls[3];

static int tp_rows(const float *src, void *dst, size_t nrows, size_t n_per_row, char *msg, size_t msg_size) {
    for (size_t r = 0; r < nrows; ++r) {
        const int rc = tp_encode(src + r * n_per_row, (char *)dst + r * (n_per_row / TP_BLOCK) * sizeof(tp_block),
                                 n_per_row, msg, msg_size);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}
static int codec_rows(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix, char *msg,
                      size_t msg_size) {
    (void)imatrix;
    abi_enc_calls[2]++;
    return tp_rows(src, dst, nrows, n_per_row, msg, msg_size);
}
static int backend_rows(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix, char *msg,
                        size_t msg_size) {
    abi_enc_calls[imatrix != NULL]++;
    return tp_rows(src, dst, nrows, n_per_row, msg, msg_size);
}
static const anvil_codec enc_codec1 = {
    .struct_size = sizeof(anvil_codec),
    .type_id = 1033,
    .name = "tp_enc",
    .family = "abi-test",
    .block_elems = TP_BLOCK,
    .block_bytes = sizeof(tp_block),
    .act_type = ANVIL_TYPE_F32,
    .encode = tp_encode,
    .decode = tp_decode,
    .encode_rows = codec_rows,
};
static const anvil_codec enc_codec2 = {
    .struct_size = sizeof(anvil_codec),
    .type_id = 1034,
    .name = "tp_enc2",
    .family = "abi-test",
    .block_elems = TP_BLOCK,
    .block_bytes = sizeof(tp_block),
    .act_type = ANVIL_TYPE_F32,
    .encode = tp_encode,
    .decode = tp_decode,
    .encode_rows = codec_rows,
};
/* ggml would ignore an importance matrix for this one */
static const anvil_codec enc_codec3 = {
    .struct_size = sizeof(anvil_codec),
    .type_id = 1035,
    .name = "tp_enc3",
    .family = "abi-test",
    .block_elems = TP_BLOCK,
    .block_bytes = sizeof(tp_block),
    .act_type = ANVIL_TYPE_F32,
    .flags = ANVIL_CODEC_IMATRIX_UNUSED,
    .encode = tp_encode,
    .decode = tp_decode,
    .encode_rows = codec_rows,
};
static const anvil_codec *const enc_codecs[] = { &enc_codec1, &enc_codec2, &enc_codec3 };
static const anvil_weight_encoder enc_weighted = {
    .struct_size = sizeof(anvil_weight_encoder),
    .type_id = 1033,
    .flags = ANVIL_ENCODER_WEIGHTED | (1u << 9),
    .variant = "enctest-w",
    .encode_rows = backend_rows,
};
static const anvil_weight_encoder enc_plain = {
    .struct_size = sizeof(anvil_weight_encoder),
#if defined(ABI_CASE_BAD_ENCODER)
    .type_id = 5000, /* neither a ggml id nor third-party */
#elif defined(ABI_CASE_DUP_ENCODER)
    .type_id = 1033, /* a second encoder for tp_enc */
#else
    .type_id = 1034,
#endif
    .variant = "enctest",
    .encode_rows = backend_rows,
};
static const anvil_weight_encoder enc_plain3 = {
    .struct_size = sizeof(anvil_weight_encoder),
    .type_id = 1035,
    .variant = "enctest",
    .encode_rows = backend_rows,
};
static const anvil_weight_encoder *const enc_encoders[] = { &enc_weighted, &enc_plain, &enc_plain3 };
static uint32_t enc_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    (void)cpu;
    snprintf(why, why_size, "test backend");
    return 5;
}
static const anvil_backend enc_backend = {
    .struct_size = sizeof(anvil_backend),
    .name = "enctest",
    .score = enc_score,
    .n_encoders = 3,
    .encoders = enc_encoders,
};
static const anvil_backend *const enc_backends[] = { &enc_backend };
#endif

#if defined(ABI_CASE_NEW_MINOR)
/* A descriptor from a future minor: extra fields appended after reserved. */
typedef struct {
    anvil_plugin_desc base;
    void *future_field_1;
    uint64_t future_field_2;
} future_desc;
static const future_desc desc_future = {
    .base = {
        .struct_size = sizeof(future_desc), .abi_major = ANVIL_ABI_MAJOR, .abi_minor = ANVIL_ABI_MINOR + 7,
        .kind = ANVIL_PLUGIN_CODEC, .id = "abi-new-minor", .version = "9.9", .license = "MIT",
        .n_codecs = 1, .codecs = codecs,
    },
    .future_field_1 = (void *)0x1234, .future_field_2 = 0xdeadbeef,
};
#define DESC (&desc_future.base)
#else
static const anvil_plugin_desc desc = {
#if defined(ABI_CASE_OLD_MINOR)
    /* An older minor's smaller struct: ends before the reserved slots. */
    .struct_size = offsetof(anvil_plugin_desc, reserved),
#else
    .struct_size = sizeof(anvil_plugin_desc),
#endif
#if defined(ABI_CASE_WRONG_MAJOR)
    .abi_major = ANVIL_ABI_MAJOR + 1,
    .abi_minor = 3,
#else
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
#endif
#if defined(ABI_CASE_SCORE_ZERO)
    .kind = ANVIL_PLUGIN_BACKEND,
    .id = "abi-score-zero",
    .n_backends = 1,
    .backends = backends,
#elif defined(ABI_CASE_PACK_BACKEND)
    .kind = ANVIL_PLUGIN_BACKEND,
#ifdef ABI_PLUGIN_ID
    .id = ABI_PLUGIN_ID,
#else
    .id = "abi-pack-backend",
#endif
    .n_backends = 1,
    .backends = pk_backends,
#elif defined(ABI_CASE_ENCODER_BACKEND) || defined(ABI_CASE_BAD_ENCODER) || defined(ABI_CASE_DUP_ENCODER)
    .kind = ANVIL_PLUGIN_MIXED,
    .id = ABI_PLUGIN_ID,
    .n_codecs = 3,
    .codecs = enc_codecs,
    .n_backends = 1,
    .backends = enc_backends,
#else
    .kind = ANVIL_PLUGIN_CODEC,
    .id = ABI_PLUGIN_ID,
    .n_codecs = 1,
    .codecs = codecs,
#endif
    .version = "1.0.0",
    .license = "MIT",
};
#define DESC (&desc)
#endif

#if !defined(ABI_CASE_NO_ENTRY)
ANVIL_PLUGIN_EXPORT const anvil_plugin_desc *anvil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
    (void)host_abi_minor;
    (void)backends;
    (void)codecs;
    (void)tp_codec;
#if defined(ABI_CASE_NULL_DESC)
    (void)host_abi_major;
    (void)DESC;
    return NULL;
#else
    return host_abi_major == ANVIL_ABI_MAJOR ? DESC : NULL;
#endif
}
#else
/* Exports something, but not the entry symbol. (Declared here, not in a
 * header: nothing calls it, it only has to be in the .so's symbol table.) */
ANVIL_PLUGIN_EXPORT int not_an_anvil_plugin(void);
ANVIL_PLUGIN_EXPORT int not_an_anvil_plugin(void) {
    (void)backends;
    (void)codecs;
    (void)tp_codec;
    (void)DESC;
    return 42;
}
#endif
