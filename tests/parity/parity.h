/* SPDX-License-Identifier: MIT */
/*
 * The parity program's shared pieces. A family module is
 *     int parity_<family>(parity_ctx *pc);
 * returning the number of failed checks; it reports every format it checks
 * with parity_report(), and when pc->golden_dir is set it (re)writes its
 * golden fixtures there.
 */
#ifndef ANVIL_PARITY_H
#define ANVIL_PARITY_H

#include <stddef.h>
#include <stdint.h>

#include "ggml_oracle.h"
#include "golden.h"
#include "inputs.h"

typedef struct parity_ctx {
    ggml_oracle *oracle;
    size_t rows; /* rows per format (at least; families may round up) */
    uint64_t seed;
    const char *golden_dir; /* write fixtures here when set */
    int verbose;
    size_t total_checks;
    size_t total_failures;
} parity_ctx;

/* One summary line: "<format> <what>: <checked> checked, <bad> mismatches". */
void parity_report(parity_ctx *pc, const char *format, const char *what, size_t checked, size_t mismatches);

/* The families, each in its own parity_<family>.c, linked weakly: a build
 * without one runs the others (parity_main.c). */
int parity_q8_0(parity_ctx *pc) __attribute__((weak));
int parity_kquants(parity_ctx *pc) __attribute__((weak));
int parity_ternary(parity_ctx *pc) __attribute__((weak));
int parity_cold(parity_ctx *pc) __attribute__((weak));
int parity_gguf(parity_ctx *pc) __attribute__((weak));
int parity_transcode(parity_ctx *pc) __attribute__((weak));
int parity_backends(parity_ctx *pc) __attribute__((weak));
int parity_backends_avx2(parity_ctx *pc) __attribute__((weak));
int parity_imatrix(parity_ctx *pc) __attribute__((weak));
int parity_quantize(parity_ctx *pc) __attribute__((weak));
int parity_hf(parity_ctx *pc) __attribute__((weak));
int parity_forward(parity_ctx *pc) __attribute__((weak));
int parity_imatrix_collect(parity_ctx *pc) __attribute__((weak));

/* Bitwise float equality (so -0.0 != 0.0 and NaN == the same NaN). */
int parity_same_bits(float a, float b);
/* Index of the first differing float (bitwise), or n. */
size_t parity_first_diff_f32(const float *a, const float *b, size_t n);
/* Index of the first differing byte, or n. */
size_t parity_first_diff_u8(const void *a, const void *b, size_t n);
/* The config anvil's context is opened with: $ANVIL_CONFIG, else the
 * build's (NULL: anvil's default search). */
const char *parity_config_path(void);
/* |a - b| <= tol * max(|a|, |b|, floor) */
int parity_close(float a, float b, float rel_tol, float abs_floor);

#endif
