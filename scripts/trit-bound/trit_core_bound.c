/* SPDX-License-Identifier: MIT */
/* The speed ceiling of backend-avx512's base-3 mat-vec (issue 29's goal 1):
 * how fast a 52-byte trit group (a TQ1_0 block's trits, one PTQTP plane)
 * can be multiplied out on this CPU when the kernel does nothing else.
 *
 * The loop is the inner part of avx512_trit_group.h's VNNI path and no
 * more: per group one load, five levels of two vpdpbusd and one multiply
 * by 3 (two byte adds), eight rows in flight against activations kept in
 * registers, all in L1. What the real kernel adds -- the reduction of each
 * row's sixteen lanes to the exact block sum, the fp16 scales, the float
 * steps, memory -- is left out, so the figure is an upper bound: a kernel
 * of this form cannot read trit bytes faster than
 *     bytes per group x groups per second.
 * For each format it prints that ceiling in Gelem/s and in GB/s of weight
 * bytes (tq1_0: 54 bytes, one group per 256 weights; ptqtp2: 108, two;
 * ptqtp3: 162, three), to set beside the read bandwidth that
 * `anvil bench --suite` measures (scripts/trit-bound/run.sh does both).
 *
 * The result of the loop is printed (its low bit) so that the compiler
 * keeps every operation. AVX-512 F/BW and VNNI only.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ROWS 8
#define GROUPS 16 /* per row: 16 x 8 x 64 bytes = 8 KiB, L1 */

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline __m512i times3(__m512i x) { return _mm512_add_epi8(x, _mm512_add_epi8(x, x)); }

/* n passes of ROWS groups: the trit_group_dot loop, 3 a - b folded into a
 * running total (one op, as the kernel's combine costs at least that). */
__attribute__((noinline)) static __m512i groups(const uint8_t *w, const __m512i *q, long n) {
    __m512i total = _mm512_setzero_si512();
    for (long i = 0; i < n; ++i) {
        const uint8_t *p = w + (size_t)(i % GROUPS) * ROWS * 64;
#pragma GCC unroll 8
        for (int r = 0; r < ROWS; ++r) {
            __m512i s = _mm512_maskz_loadu_epi8(0x000FFFFFFFFFFFFFull, p + 64 * r);
            __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
            for (int j = 0; j < 5; ++j) {
                a = _mm512_dpbusd_epi32(a, s, q[j]);
                s = times3(s);
                b = _mm512_dpbusd_epi32(b, s, q[j]);
            }
            total = _mm512_add_epi32(total, _mm512_sub_epi32(a, b));
        }
    }
    return total;
}

int main(void) {
    static uint8_t w[GROUPS * ROWS * 64];
    for (size_t i = 0; i < sizeof w; ++i) w[i] = (uint8_t)(i * 37u + 11u);
    __m512i q[5];
    for (int j = 0; j < 5; ++j) q[j] = _mm512_set1_epi8((char)(7 * j - 13));

    long n = 1L << 16;
    double best = 1e30;
    int low = 0;
    for (int pass = 0; pass < 12; ++pass) { /* grow to ~0.1 s a pass, keep the best */
        const double t0 = seconds();
        low ^= _mm512_reduce_add_epi32(groups(w, q, n)) & 1;
        const double dt = seconds() - t0;
        if (dt < 0.05) {
            n *= 4;
            continue;
        }
        const double per_group = dt / ((double)n * ROWS);
        if (per_group < best) best = per_group;
    }
    const double gps = 1.0 / best; /* groups per second */
    printf("trit group (10 vpdpbusd + 10 byte adds + load): %.2f ns, %.2f Ggroups/s (check bit %d)\n", best * 1e9,
           gps * 1e-9, low);
    static const struct {
        const char *name;
        int groups, bytes;
    } fmt[] = { { "tq1_0", 1, 54 }, { "ptqtp2", 2, 108 }, { "ptqtp3", 3, 162 } };
    printf("%-8s %10s %10s\n", "type", "Gelem/s", "GB/s");
    for (int f = 0; f < 3; ++f) {
        const double blocks = gps / fmt[f].groups; /* 256-weight blocks per second */
        printf("%-8s %10.1f %10.2f\n", fmt[f].name, blocks * 256e-9, blocks * fmt[f].bytes * 1e-9);
    }
    return 0;
}
