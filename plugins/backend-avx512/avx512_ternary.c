/* SPDX-License-Identifier: MIT */
/* backend-avx512: TQ2_0 and TQ1_0 (ternary weights) against Q8_K, and their
 * row decoders.
 *
 * A ternary weight is c - 1 with c in {0, 1, 2} (TQ2_0 also decodes c = 3,
 * which the encoder never writes), so
 *     sum (c - 1) a = sum c a - sum a
 * where sum c a is an unsigned-by-signed multiply-add and sum a is the sum of
 * the Q8_K bsums, computed once per block for all R rows. TQ2_0: a whole
 * 256-element super-block of a row is four zmm of codes against four zmm of
 * activations (loaded once per block for the R rows). TQ1_0: the 52 trit
 * bytes as one group against the activations in their order
 * (avx512_trit_group.h, simd_trit_act.h; the sum of the activations from
 * their codes, once per block). Float part, as
 * plugins/ref/ternary_tq*.c (and backend-avx2):
 *     TQ2_0  sumf += (float)sumi * (y.d * fp16(x.d))
 *     TQ1_0  sumf += (float)sumi * (fp16(x.d) * y.d)
 *
 * Integer accumulation: with VNNI, vpdpbusd straight into int32. Without,
 * the vpmaddubsw pair sums are added in int16 (bounds at each kernel) and
 * widened by one vpmaddwd per row and block. Both give the exact integer.
 */
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "avx512_trit_group.h"

#define Q8K_QS 4
#define Q8K_BSUMS 260
#define Q8K_BYTES 292
#define TQ2_0_BYTES 66
#define TQ1_0_BYTES 54

/* A load the compiler must keep in a register: a vector that is both
 * masked and shifted is otherwise folded into each instruction as a memory
 * operand and loaded three times (the L1 load ports are a bottleneck of
 * these kernels). Native builds only (SIMDe's vectors are not registers). */
AVX512_INLINE __m512i load_reg(const void *p) {
    __m512i v = avx512_load(p);
#if !AVX512_EMULATED
    __asm__("" : "+v"(v));
#endif
    return v;
}

/* Sum of a block's 256 activation codes (from its sixteen int16 bsums), in
 * every lane. Once per block for all R rows. */
AVX512_INLINE __m256i q8k_total(const uint8_t *a) {
    const __m256i s = _mm256_madd_epi16(avx512_load256(a + Q8K_BSUMS), _mm256_set1_epi16(1));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(t), t, 1);
}

/* ---- TQ2_0 ------------------------------------------------------------------
 * qs[64] then d. Byte j + m (j in {0, 32}, m < 32) holds, in bit pair l,
 * element 4 j + 32 l + m. So the row's 64 code bytes are one zmm whose bit
 * pair l lines up with activations [32 l, 32 l + 32) in the low 256 bits
 * and [128 + 32 l, 128 + 32 l + 32) in the high 256 bits: four activation
 * vectors per block, shared by the R rows.
 *
 * Planes 0 and 2 come out as c (mask 0x03 of q and of q >> 4), planes 1 and
 * 3 as 4 c (mask 0x0C, in place): one shift per row and block. The two
 * families have their own accumulators and the second is divided back
 * exactly (each of its int32 / int16 lanes is a sum of multiples of 4).
 * Bounds without VNNI (int16 lanes, two vpmaddubsw each): c family
 * 2 * 2 * 3 * 127 = 1524, 4c family 2 * 2 * 12 * 127 = 6096. */
AVX512_INLINE void tq2_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    const __m512i m3 = _mm512_set1_epi8(0x03), mc = _mm512_set1_epi8(0x0C);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += TQ2_0_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, TQ2_0_BYTES, ws, R);
        const uint8_t *qa = a + Q8K_QS;
        const __m512i a0 = avx512_load2x256(qa, qa + 128), a1 = avx512_load2x256(qa + 32, qa + 160);
        const __m512i a2 = avx512_load2x256(qa + 64, qa + 192), a3 = avx512_load2x256(qa + 96, qa + 224);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const __m512i q = load_reg(w + (size_t)r * ws), q4 = _mm512_srli_epi16(q, 4);
#if AVX512_VNNI
            /* the 4c family first; divided by 4, it seeds the c family's
             * accumulation (one accumulator, no add) */
            __m512i p = avx512_dpbusd(_mm512_setzero_si512(), _mm512_and_si512(q, mc), a1);
            p = _mm512_srai_epi32(avx512_dpbusd(p, _mm512_and_si512(q4, mc), a3), 2);
            p = avx512_dpbusd(p, _mm512_and_si512(q, m3), a0);
            m[r] = avx512_dpbusd(p, _mm512_and_si512(q4, m3), a2);
#else
            const __m512i p1 = _mm512_add_epi16(_mm512_maddubs_epi16(_mm512_and_si512(q, m3), a0),
                                                _mm512_maddubs_epi16(_mm512_and_si512(q4, m3), a2));
            const __m512i p4 = _mm512_add_epi16(_mm512_maddubs_epi16(_mm512_and_si512(q, mc), a1),
                                                _mm512_maddubs_epi16(_mm512_and_si512(q4, mc), a3));
            m[r] = _mm512_madd_epi16(_mm512_add_epi16(p1, _mm512_srai_epi16(p4, 2)), _mm512_set1_epi16(1));
#endif
        }
        const __m256i sumi = _mm256_sub_epi32(avx512_reduce(m, R), q8k_total(a));
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(anvil_rd_f32(a)), simd_x86_halves(w + 64, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(sumi), d));
    }
    avx512_store_rows(y, acc, R);
}

/* ---- TQ1_0 ------------------------------------------------------------------
 * Five trits per byte as a base-3 fraction of 256: with q_0 the byte and
 * q_{t+1} = 3 q_t mod 256, trit t is floor(3 q_t / 256), i.e. 0 for
 * q_t <= 85, 1 for 86..170, 2 for 171..255. Element order (ggml's):
 * qs[0..31] elements 32 t + m, qs[32..47] 160 + 16 t + m, qh[0..3]
 * 240 + 4 t + m. Four zmm of trits then cover elements 0..63, 64..127,
 * 128..191 and 192..255 in order, against four plain activation loads:
 *   z0 = [q, 3q]             (q = qs[0..31]: trits 0, 1)
 *   z1 = [9q, 27q]           (trits 2, 3)
 *   z2 = [81q | p, 3p]       (trit 4; p = qs[32..47]: trits 0, 1)
 *   z3 = [9p, 27p, 81p, h]   (p's trits 2..4; h: dword t = qh * 3^t)
 * each multiple taken bytewise mod 256, then split into trits (the
 * decoder's order; the mat-vec keeps the bytes' own order instead). */

AVX512_INLINE __m512i times3(__m512i x) { return _mm512_add_epi8(x, _mm512_add_epi8(x, x)); }
AVX512_INLINE __m512i times9(__m512i x) { return times3(times3(x)); }

AVX512_INLINE __m512i trits(__m512i x) {
    const __mmask64 gt85 = _mm512_cmpgt_epu8_mask(x, _mm512_set1_epi8(85));
    const __mmask64 gt170 = _mm512_cmpgt_epu8_mask(x, _mm512_set1_epi8((char)170));
    return _mm512_mask_mov_epi8(_mm512_maskz_mov_epi8(gt85, _mm512_set1_epi8(1)), gt170, _mm512_set1_epi8(2));
}

AVX512_INLINE void tq1_0_trits(const uint8_t *blk, __m512i z[4]) {
    const __m512i b = _mm512_broadcast_i64x4(avx512_load256(blk));
    const __m512i q0 = _mm512_mask_blend_epi64(0xF0, b, times3(b)); /* [q | 3q] */
    z[0] = trits(q0);
    const __m512i q1 = times9(q0); /* [9q | 27q] */
    z[1] = trits(q1);
    const __m512i q2 = times9(q1); /* [81q | 243q] */
    /* f0 = [p, p, p, qh qh qh qh] (128-bit lanes; the last in dwords) */
    const __m512i f0 = _mm512_mask_blend_epi32(0xF000, _mm512_broadcast_i32x4(avx512_load128(blk + 32)),
                                               _mm512_set1_epi32((int)anvil_rd_u32(blk + 48)));
    /* g = [p, 3p, p, (qh, 3qh, qh, 3qh)] */
    const __m512i g = _mm512_mask_blend_epi32(0xA0F0, f0, times3(f0));
    const __m512i g9 = times9(g), g81 = times9(g9);
    z[2] = trits(_mm512_shuffle_i64x2(q2, g, _MM_SHUFFLE(1, 0, 1, 0)));
    /* [9p, 27p, 81p, (qh, 3qh, 9qh, 27qh)] */
    z[3] = trits(_mm512_mask_blend_epi32(0x3000, _mm512_mask_blend_epi32(0x0F00, g9, g81), g));
}

/* The mat-vec: avx512_trit_group.h's exact sum of trit * code per block
 * (the trits are c - 1), against the activation row rearranged once per
 * call (simd_trit_act.h). */
AVX512_INLINE void tq1_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *act, float *y, const int R,
                              simd_pf *pf) {
    const simd_trit_act *A = (const simd_trit_act *)act;
    __m256 acc = A->carry ? avx512_load_rows(y, R) : _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += TQ1_0_BYTES, ++A) {
        simd_pf_block(pf, b, TQ1_0_BYTES, ws, R);
        __m512i Q[5];
        for (int j = 0; j < 5; ++j) Q[j] = avx512_load(A->q[j]);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) m[r] = trit_group_dot(w + (size_t)r * ws, Q);
        const __m256i sumi = trit_group_sums(m, R, A);
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w + 52, ws, R), _mm256_set1_ps(A->d));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(sumi), d));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS_R4(tq2_0, 256, TQ2_0_BYTES) /* out of cache: see simd_row_passes.h */
SIMD_DEFINE_TRIT_ENTRY_POINTS(tq1_0, TQ1_0_BYTES)

/* ---- decoders: (float)(c - 1) * d, as the reference ------------------------- */

/* 16 codes (int32 lanes) -> dst[0..15]. */
AVX512_INLINE void decode_codes16(__m512i c, __m512 d, float *dst) {
    const __m512i w = _mm512_sub_epi32(c, _mm512_set1_epi32(1));
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_cvtepi32_ps(w), d));
}

static void tq2_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m512i m3 = _mm512_set1_epi32(3);
    for (size_t i = 0; i < n / 256; ++i, b += TQ2_0_BYTES, dst += 256) {
        const __m512 d = _mm512_set1_ps(avx512_half(b + 64));
        /* bytes 32 h + 16 k + m, bit pair l: element 128 h + 32 l + 16 k + m */
        for (int h = 0; h < 2; ++h) {
            for (int k = 0; k < 2; ++k) {
                /* sign-extended: every plane below is masked to its two bits */
                const __m512i q = _mm512_cvtepi8_epi32(avx512_load128(b + 32 * h + 16 * k));
                decode_codes16(_mm512_and_si512(q, m3), d, dst + 128 * h + 16 * k);
                decode_codes16(_mm512_and_si512(_mm512_srli_epi32(q, 2), m3), d, dst + 128 * h + 32 + 16 * k);
                decode_codes16(_mm512_and_si512(_mm512_srli_epi32(q, 4), m3), d, dst + 128 * h + 64 + 16 * k);
                decode_codes16(_mm512_and_si512(_mm512_srli_epi32(q, 6), m3), d, dst + 128 * h + 96 + 16 * k);
            }
        }
    }
}

static void tq1_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += TQ1_0_BYTES) {
        const __m512 d = _mm512_set1_ps(avx512_half(b + 52));
        __m512i z[4];
        tq1_0_trits(b, z);
        for (int k = 0; k < 4; ++k) {
            for (int j = 0; j < 4; ++j, dst += 16) {
                __m128i part;
                switch (j) { /* lane index must be a constant */
                case 0: part = _mm512_extracti32x4_epi32(z[k], 0); break;
                case 1: part = _mm512_extracti32x4_epi32(z[k], 1); break;
                case 2: part = _mm512_extracti32x4_epi32(z[k], 2); break;
                default: part = _mm512_extracti32x4_epi32(z[k], 3); break;
                }
                decode_codes16(_mm512_cvtepi8_epi32(part), d, dst); /* trits: 0..2 */
            }
        }
    }
}

AVX512_KERNEL(kernel_tq1_0, ANVIL_TYPE_TQ1_0, ANVIL_TYPE_Q8_K, tq1_0_vec_dot, tq1_0_gemv, tq1_0_gemm, tq1_0_decode);
AVX512_KERNEL(kernel_tq2_0, ANVIL_TYPE_TQ2_0, ANVIL_TYPE_Q8_K, tq2_0_vec_dot, tq2_0_gemv, tq2_0_gemm, tq2_0_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_ternary)[] = { &kernel_tq1_0, &kernel_tq2_0, NULL };
