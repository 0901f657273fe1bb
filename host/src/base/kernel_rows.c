/* SPDX-License-Identifier: MIT */
/* The row runners of kernel_rows.h: one per combination of the optional
 * kernel entry points, chosen once per kernel (registry.c), so the mat-vec
 * task calls one function instead of testing for NULL entries per task. */
#include "kernel_rows.h"

void anvil__rows_vec_dot(const anvil__rows_call *c, size_t r0, size_t r1) {
    for (size_t i = 0; i < c->m; ++i) {
        const void *ai = (const char *)c->act + i * c->act_bytes;
        float *yi = c->y + i * c->n;
        for (size_t r = r0; r < r1; ++r) c->vec_dot(c->k, &yi[r], c->w + r * c->row_bytes, ai);
    }
}

static void rows_gemv(const anvil__rows_call *c, size_t r0, size_t r1) {
    for (size_t i = 0; i < c->m; ++i) {
        const void *ai = (const char *)c->act + i * c->act_bytes;
        c->gemv(c->k, r1 - r0, c->y + i * c->n + r0, c->w + r0 * c->row_bytes, c->row_bytes, ai);
    }
}

static void gemm(const anvil__rows_call *c, size_t r0, size_t r1) {
    c->gemm(c->k, r1 - r0, c->m, c->y + r0, c->n, c->w + r0 * c->row_bytes, c->row_bytes, c->act, c->act_bytes);
}

static void rows_gemm_gemv(const anvil__rows_call *c, size_t r0, size_t r1) {
    if (c->m > 1) {
        gemm(c, r0, r1);
    } else {
        rows_gemv(c, r0, r1);
    }
}

static void rows_gemm_vec_dot(const anvil__rows_call *c, size_t r0, size_t r1) {
    if (c->m > 1) {
        gemm(c, r0, r1);
    } else {
        anvil__rows_vec_dot(c, r0, r1);
    }
}

void anvil__rows_packed(const anvil__rows_call *c, size_t r0, size_t r1) {
    c->gemm_packed(c->k, c->n, r0, r1, c->m, c->y, c->n, c->packed, c->act, c->act_bytes);
}

anvil__rows_fn anvil__kernel_rows_for(const anvil_kernel *k) {
    if (k->gemm != NULL) return k->gemv != NULL ? rows_gemm_gemv : rows_gemm_vec_dot;
    return k->gemv != NULL ? rows_gemv : anvil__rows_vec_dot;
}
