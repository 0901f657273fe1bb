/* SPDX-License-Identifier: MIT */
/* Internal: how the host runs a kernel over a block of weight rows
 * (kernel_rows.c). A backend's GEMM and GEMV are optional; the registry
 * picks, once per kernel when it normalises the backend, the one function
 * that uses what the kernel has and falls back to a loop over its vec_dot
 * for what it lacks, so matmul's task makes one call. */
#ifndef ANVIL_HOST_KERNEL_ROWS_H
#define ANVIL_HOST_KERNEL_ROWS_H

#include <stddef.h>

#include "anvil/backend.h"

/* One matmul's operands: y[i * n + r] = W[r, :] . act[i] for i < m. */
typedef struct anvil__rows_call {
    anvil_vec_dot_fn vec_dot; /* the kernel's (or a codec's reference dot) */
    anvil_gemv_fn gemv;       /* NULL when the kernel has none */
    anvil_gemm_fn gemm;       /* NULL when the kernel has none */
    anvil_gemm_packed_fn gemm_packed;
    const void *packed; /* the backend's packed copy of W (gemm_packed) */
    size_t k;           /* elements per row */
    size_t n;           /* rows of W: y's row stride */
    size_t m;           /* activation rows */
    float *y;
    const char *w;
    size_t row_bytes;
    const void *act;
    size_t act_bytes;
} anvil__rows_call;

/* Compute y for weight rows [r0, r1) and every activation row. */
typedef void (*anvil__rows_fn)(const anvil__rows_call *c, size_t r0, size_t r1);

/* For a normalised kernel: GEMM when m > 1 and the kernel has one, else GEMV
 * per activation row, else vec_dot per weight row. */
anvil__rows_fn anvil__kernel_rows_for(const anvil_kernel *k);
/* The same contract with vec_dot only (a codec's reference dot). */
void anvil__rows_vec_dot(const anvil__rows_call *c, size_t r0, size_t r1);
/* gemm_packed over the packed copy. */
void anvil__rows_packed(const anvil__rows_call *c, size_t r0, size_t r1);

#endif
