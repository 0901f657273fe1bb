/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — type ids and block layouts.
 *
 * Type ids are ggml's on-disk numbering (enum ggml_type): a GGUF tensor's
 * type field is one of these. Ids 1024..2047 belong to third-party codecs.
 * Block structs reproduce ggml-common.h byte for byte; each size is pinned
 * by a static assertion so a layout drift cannot compile.
 *
 * Multi-byte fields are little-endian on disk; anvil targets little-endian
 * hosts only (x86-64, aarch64).
 */
#ifndef ANVIL_BLOCKS_H
#define ANVIL_BLOCKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compile-time check usable from C99, C11 and C++ (the SDK must compile with
 * -std=c99 -pedantic and with a C++ compiler). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define ANVIL_STATIC_ASSERT(name, c) static_assert(c, #name)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ANVIL_STATIC_ASSERT(name, c) _Static_assert(c, #name)
#else
#define ANVIL_STATIC_ASSERT(name, c) typedef char anvil_static_assert_##name[(c) ? 1 : -1]
#endif

enum anvil_type_id {
    ANVIL_TYPE_F32 = 0,
    ANVIL_TYPE_F16 = 1,
    ANVIL_TYPE_Q4_0 = 2,
    ANVIL_TYPE_Q4_1 = 3,
    /* 4, 5: removed (Q4_2, Q4_3) */
    ANVIL_TYPE_Q5_0 = 6,
    ANVIL_TYPE_Q5_1 = 7,
    ANVIL_TYPE_Q8_0 = 8,
    ANVIL_TYPE_Q8_1 = 9,
    ANVIL_TYPE_Q2_K = 10,
    ANVIL_TYPE_Q3_K = 11,
    ANVIL_TYPE_Q4_K = 12,
    ANVIL_TYPE_Q5_K = 13,
    ANVIL_TYPE_Q6_K = 14,
    ANVIL_TYPE_Q8_K = 15,
    ANVIL_TYPE_IQ2_XXS = 16,
    ANVIL_TYPE_IQ2_XS = 17,
    ANVIL_TYPE_IQ3_XXS = 18,
    ANVIL_TYPE_IQ1_S = 19,
    ANVIL_TYPE_IQ4_NL = 20,
    ANVIL_TYPE_IQ3_S = 21,
    ANVIL_TYPE_IQ2_S = 22,
    ANVIL_TYPE_IQ4_XS = 23,
    ANVIL_TYPE_I8 = 24,
    ANVIL_TYPE_I16 = 25,
    ANVIL_TYPE_I32 = 26,
    ANVIL_TYPE_I64 = 27,
    ANVIL_TYPE_F64 = 28,
    ANVIL_TYPE_IQ1_M = 29,
    ANVIL_TYPE_BF16 = 30,
    /* 31..33: removed (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) */
    ANVIL_TYPE_TQ1_0 = 34,
    ANVIL_TYPE_TQ2_0 = 35,
    /* 36..38: removed (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) */
    ANVIL_TYPE_MXFP4 = 39,
    ANVIL_TYPE_NVFP4 = 40,
    ANVIL_TYPE_Q1_0 = 41,
    ANVIL_TYPE_Q2_0 = 42,
    ANVIL_TYPE_GGML_COUNT = 43,

    ANVIL_TYPE_THIRD_PARTY_FIRST = 1024,
    ANVIL_TYPE_THIRD_PARTY_LAST = 2047
};

/* IEEE binary16 bits, as ggml_half. */
typedef uint16_t anvil_half;

#define ANVIL_QK4_0 32
#define ANVIL_QK4_1 32
#define ANVIL_QK5_0 32
#define ANVIL_QK5_1 32
#define ANVIL_QK8_0 32
#define ANVIL_QK8_1 32
#define ANVIL_QK_K 256
#define ANVIL_K_SCALE_SIZE 12
#define ANVIL_QK4_NL 32
#define ANVIL_QK_MXFP4 32
#define ANVIL_QK_NVFP4 64
#define ANVIL_QK_NVFP4_SUB 16
#define ANVIL_QK1_0 128
#define ANVIL_QK2_0 64

/* ---- the flat 32-element family ---- */
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK4_0 / 2];
} anvil_block_q4_0;
typedef struct {
    anvil_half d;
    anvil_half m;
    uint8_t qs[ANVIL_QK4_1 / 2];
} anvil_block_q4_1;
typedef struct {
    anvil_half d;
    uint8_t qh[4];
    uint8_t qs[ANVIL_QK5_0 / 2];
} anvil_block_q5_0;
typedef struct {
    anvil_half d;
    anvil_half m;
    uint8_t qh[4];
    uint8_t qs[ANVIL_QK5_1 / 2];
} anvil_block_q5_1;
typedef struct {
    anvil_half d;
    int8_t qs[ANVIL_QK8_0];
} anvil_block_q8_0;
/* s = d * sum(qs) */
typedef struct {
    anvil_half d;
    anvil_half s;
    int8_t qs[ANVIL_QK8_1];
} anvil_block_q8_1;

/* ---- K-quants: 256-element super-blocks ---- */
typedef struct {
    uint8_t scales[ANVIL_QK_K / 16]; /* 4-bit scale | 4-bit min */
    uint8_t qs[ANVIL_QK_K / 4];
    anvil_half d;
    anvil_half dmin;
} anvil_block_q2_K;
typedef struct {
    uint8_t hmask[ANVIL_QK_K / 8];
    uint8_t qs[ANVIL_QK_K / 4];
    uint8_t scales[12];
    anvil_half d;
} anvil_block_q3_K;
typedef struct {
    anvil_half d;
    anvil_half dmin;
    uint8_t scales[ANVIL_K_SCALE_SIZE];
    uint8_t qs[ANVIL_QK_K / 2];
} anvil_block_q4_K;
typedef struct {
    anvil_half d;
    anvil_half dmin;
    uint8_t scales[ANVIL_K_SCALE_SIZE];
    uint8_t qh[ANVIL_QK_K / 8];
    uint8_t qs[ANVIL_QK_K / 2];
} anvil_block_q5_K;
typedef struct {
    uint8_t ql[ANVIL_QK_K / 2];
    uint8_t qh[ANVIL_QK_K / 4];
    int8_t scales[ANVIL_QK_K / 16];
    anvil_half d;
} anvil_block_q6_K;
typedef struct {
    float d;
    int8_t qs[ANVIL_QK_K];
    int16_t bsums[ANVIL_QK_K / 16];
} anvil_block_q8_K;

/* ---- i-quants ---- */
typedef struct {
    anvil_half d;
    uint16_t qs[ANVIL_QK_K / 8];
} anvil_block_iq2_xxs;
typedef struct {
    anvil_half d;
    uint16_t qs[ANVIL_QK_K / 8];
    uint8_t scales[ANVIL_QK_K / 32];
} anvil_block_iq2_xs;
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK_K / 4];
    uint8_t qh[ANVIL_QK_K / 32];
    uint8_t scales[ANVIL_QK_K / 32];
} anvil_block_iq2_s;
typedef struct {
    anvil_half d;
    uint8_t qs[3 * ANVIL_QK_K / 8];
} anvil_block_iq3_xxs;
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK_K / 4];
    uint8_t qh[ANVIL_QK_K / 32];
    uint8_t signs[ANVIL_QK_K / 8];
    uint8_t scales[ANVIL_QK_K / 64];
} anvil_block_iq3_s;
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK_K / 8];
    uint16_t qh[ANVIL_QK_K / 32];
} anvil_block_iq1_s;
typedef struct {
    uint8_t qs[ANVIL_QK_K / 8];
    uint8_t qh[ANVIL_QK_K / 16];
    uint8_t scales[ANVIL_QK_K / 32];
} anvil_block_iq1_m;
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK4_NL / 2];
} anvil_block_iq4_nl;
typedef struct {
    anvil_half d;
    uint16_t scales_h;
    uint8_t scales_l[ANVIL_QK_K / 64];
    uint8_t qs[ANVIL_QK_K / 2];
} anvil_block_iq4_xs;

/* ---- ternary and sub-2-bit ---- */
typedef struct {
    uint8_t qs[(ANVIL_QK_K - 4 * ANVIL_QK_K / 64) / 5]; /* 5 trits per byte */
    uint8_t qh[ANVIL_QK_K / 64];                        /* 4 trits per byte */
    anvil_half d;
} anvil_block_tq1_0;
typedef struct {
    uint8_t qs[ANVIL_QK_K / 4];
    anvil_half d;
} anvil_block_tq2_0;
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK1_0 / 8];
} anvil_block_q1_0;
typedef struct {
    anvil_half d;
    uint8_t qs[ANVIL_QK2_0 / 4];
} anvil_block_q2_0;

/* ---- micro-scaled FP4 ---- */
typedef struct {
    uint8_t e;
    uint8_t qs[ANVIL_QK_MXFP4 / 2];
} anvil_block_mxfp4; /* E8M0 scale */
typedef struct {
    uint8_t d[ANVIL_QK_NVFP4 / ANVIL_QK_NVFP4_SUB]; /* UE4M3 scales */
    uint8_t qs[ANVIL_QK_NVFP4 / 2];
} anvil_block_nvfp4;

ANVIL_STATIC_ASSERT(block_q4_0_size, sizeof(anvil_block_q4_0) == 18);
ANVIL_STATIC_ASSERT(block_q4_1_size, sizeof(anvil_block_q4_1) == 20);
ANVIL_STATIC_ASSERT(block_q5_0_size, sizeof(anvil_block_q5_0) == 22);
ANVIL_STATIC_ASSERT(block_q5_1_size, sizeof(anvil_block_q5_1) == 24);
ANVIL_STATIC_ASSERT(block_q8_0_size, sizeof(anvil_block_q8_0) == 34);
ANVIL_STATIC_ASSERT(block_q8_1_size, sizeof(anvil_block_q8_1) == 36);
ANVIL_STATIC_ASSERT(block_q2_K_size, sizeof(anvil_block_q2_K) == 84);
ANVIL_STATIC_ASSERT(block_q3_K_size, sizeof(anvil_block_q3_K) == 110);
ANVIL_STATIC_ASSERT(block_q4_K_size, sizeof(anvil_block_q4_K) == 144);
ANVIL_STATIC_ASSERT(block_q5_K_size, sizeof(anvil_block_q5_K) == 176);
ANVIL_STATIC_ASSERT(block_q6_K_size, sizeof(anvil_block_q6_K) == 210);
ANVIL_STATIC_ASSERT(block_q8_K_size, sizeof(anvil_block_q8_K) == 292);
ANVIL_STATIC_ASSERT(block_iq2_xxs_size, sizeof(anvil_block_iq2_xxs) == 66);
ANVIL_STATIC_ASSERT(block_iq2_xs_size, sizeof(anvil_block_iq2_xs) == 74);
ANVIL_STATIC_ASSERT(block_iq3_xxs_size, sizeof(anvil_block_iq3_xxs) == 98);
ANVIL_STATIC_ASSERT(block_iq1_s_size, sizeof(anvil_block_iq1_s) == 50);
ANVIL_STATIC_ASSERT(block_iq4_nl_size, sizeof(anvil_block_iq4_nl) == 18);
ANVIL_STATIC_ASSERT(block_iq3_s_size, sizeof(anvil_block_iq3_s) == 110);
ANVIL_STATIC_ASSERT(block_iq2_s_size, sizeof(anvil_block_iq2_s) == 82);
ANVIL_STATIC_ASSERT(block_iq4_xs_size, sizeof(anvil_block_iq4_xs) == 136);
ANVIL_STATIC_ASSERT(block_iq1_m_size, sizeof(anvil_block_iq1_m) == 56);
ANVIL_STATIC_ASSERT(block_tq1_0_size, sizeof(anvil_block_tq1_0) == 54);
ANVIL_STATIC_ASSERT(block_tq2_0_size, sizeof(anvil_block_tq2_0) == 66);
ANVIL_STATIC_ASSERT(block_mxfp4_size, sizeof(anvil_block_mxfp4) == 17);
ANVIL_STATIC_ASSERT(block_nvfp4_size, sizeof(anvil_block_nvfp4) == 36);
ANVIL_STATIC_ASSERT(block_q1_0_size, sizeof(anvil_block_q1_0) == 18);
ANVIL_STATIC_ASSERT(block_q2_0_size, sizeof(anvil_block_q2_0) == 18);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_BLOCKS_H */
