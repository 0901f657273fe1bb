/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — compute backend vtable.
 *
 * A backend offers kernels keyed by (weight type, activation type):
 * activation quantizers, vec_dot, optional multi-row GEMV/GEMM, fast row
 * decode, and optional packed-RHS layouts. It scores itself against the CPU
 * the host probed; 0 means "cannot run here" and the host skips it, showing
 * the reason.
 *
 * Kernels are pure functions of their arguments: they never call back into
 * the host, never allocate, never keep pointers, and may run on any thread.
 * Integer parts of a dot must match the scalar backend exactly; the final
 * f32 may differ by accumulation order only: within 1e-5 of the magnitude of
 * its terms (the sum over blocks of |scale products x integer sums|), which
 * is 1e-5 relative to the result unless the terms cancel.
 */
#ifndef ANVIL_BACKEND_H
#define ANVIL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/abi.h"
#include "anvil/codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Quantize n f32 activations (a whole number of act blocks) into act blocks.
 * Bit-identical to the activation codec's encoder on finite input. */
typedef void (*anvil_quantize_fn)(const float *x, void *dst, size_t n);

/* y[r] = dot(row r of w, a) for r in [0, nrows); row r starts at
 * (const char *)w + r * w_stride. n elements per row. */
typedef void (*anvil_gemv_fn)(size_t n, size_t nrows, float *y, const void *w, size_t w_stride, const void *a);

/* y[i * y_stride + r] = dot(row r of w, activation row i) for i < m,
 * r < nrows; activation row i starts at (const char *)a + i * a_stride. */
typedef void (*anvil_gemm_fn)(size_t n, size_t nrows, size_t m, float *y, size_t y_stride, const void *w,
                              size_t w_stride, const void *a, size_t a_stride);

/* Decode one row of n elements to f32, bit-identical to the codec. */
typedef void (*anvil_decode_row_fn)(const void *src, float *dst, size_t n);

/* Packed RHS: a column-interleaved copy of a weight matrix, built once.
 * packed_size returns the bytes needed for nrows x n, or 0 when this shape
 * cannot be packed (then the host uses the plain layout). pack returns a
 * status. gemm_packed computes rows [r0, r1) (multiples of pack_rows, except
 * r1 == nrows) for m activation rows, writing y[i * y_stride + r]. */
typedef size_t (*anvil_packed_size_fn)(size_t n, size_t nrows);
typedef int (*anvil_pack_fn)(const void *w, size_t w_stride, size_t n, size_t nrows, void *dst, size_t dst_size);
typedef void (*anvil_gemm_packed_fn)(size_t n, size_t nrows, size_t r0, size_t r1, size_t m, float *y,
                                     size_t y_stride, const void *packed, const void *a, size_t a_stride);

typedef struct anvil_act_quantizer {
    uint32_t struct_size;
    uint32_t act_type;   /* ANVIL_TYPE_Q8_0 / Q8_1 / Q8_K ... */
    const char *variant; /* e.g. "avx512bw"; for display */
    anvil_quantize_fn quantize;
    void *reserved[4];
} anvil_act_quantizer;

typedef struct anvil_kernel {
    uint32_t struct_size;
    uint32_t weight_type;
    uint32_t act_type;
    uint32_t pack_rows;               /* rows per packed group; 0 when no packing */
    const char *variant;              /* e.g. "avx512-vnni"; for display */
    anvil_vec_dot_fn vec_dot;         /* required */
    anvil_gemv_fn gemv;               /* optional */
    anvil_gemm_fn gemm;               /* optional */
    anvil_decode_row_fn decode_row;   /* optional */
    anvil_packed_size_fn packed_size; /* optional, with pack and gemm_packed */
    anvil_pack_fn pack;
    anvil_gemm_packed_fn gemm_packed;
    void *reserved[4];
} anvil_kernel;

/* ABI 1.1: a weight encoder a backend offers for a codec's format (e.g. a
 * SIMD port of the codec's reference encoder). Same contract and bytes as
 * the codec's encode_rows: the codec stays the referee, and the host uses
 * the backend's encoder only where it is chosen (config order, CPU score),
 * falling back to the codec's. */
#define ANVIL_ENCODER_WEIGHTED (1u << 0) /* also handles imatrix != NULL */

typedef struct anvil_weight_encoder {
    uint32_t struct_size;
    uint32_t type_id; /* the codec format it encodes */
    uint32_t flags;   /* ANVIL_ENCODER_* */
    uint32_t reserved0;
    const char *variant; /* e.g. "avx2"; for display */
    /* Called with imatrix == NULL unless ANVIL_ENCODER_WEIGHTED is set. */
    anvil_encode_rows_fn encode_rows;
    void *reserved[4];
} anvil_weight_encoder;

typedef struct anvil_backend {
    uint32_t struct_size;
    uint32_t reserved0;
    const char *name; /* what `[backends] order` names, e.g. "scalar" */
    const char *description;
    /* 0: cannot run on this CPU (write why); otherwise a preference score:
     * among usable backends [backends] order does not name, the higher
     * score is tried first (sdk/ABI.md, "Backends"). */
    uint32_t (*score)(const anvil_cpu_info *cpu, char *why, size_t why_size);
    size_t n_quantizers;
    const anvil_act_quantizer *const *quantizers;
    size_t n_kernels;
    const anvil_kernel *const *kernels;
    void *reserved[8];
    /* ---- ABI 1.1 ---- */
    size_t n_encoders; /* optional weight encoders */
    const anvil_weight_encoder *const *encoders;
} anvil_backend;

/* ---- helpers for a backend's init and score (header-only) --------------- */

/* Append the NULL-terminated table src to dst[n .. cap) and return the new
 * count; entries that do not fit are dropped and set *overflow. A backend
 * assembles its quantizer, kernel and encoder lists from per-family tables
 * with it at init. */
static inline size_t anvil_table_append(const void **dst, size_t n, size_t cap, const void *const *src,
                                        int *overflow) {
    for (size_t i = 0; src[i] != NULL; ++i) {
        if (n < cap) {
            dst[n++] = src[i];
        } else {
            *overflow = 1;
        }
    }
    return n;
}

/* A CPU feature a backend needs: its ANVIL_CPU_* bit and its name. */
typedef struct anvil_cpu_need {
    uint64_t bit;
    const char *name;
} anvil_cpu_need;

/* The names of the needs that cpu->features lacks, space-separated, into out
 * (always terminated, cut to fit); returns how many are lacking. For the
 * score's "lacks: ..." reason. */
static inline size_t anvil_cpu_lacks(const anvil_cpu_info *cpu, const anvil_cpu_need *need, size_t n_need, char *out,
                                     size_t out_size) {
    size_t lacking = 0, used = 0;
    if (out_size > 0) out[0] = '\0';
    for (size_t i = 0; i < n_need; ++i) {
        if ((cpu->features & need[i].bit) != 0) continue;
        ++lacking;
        for (const char *p = lacking > 1 ? " " : ""; *p != '\0' && used + 1 < out_size; ++p) out[used++] = *p;
        for (const char *p = need[i].name; *p != '\0' && used + 1 < out_size; ++p) out[used++] = *p;
        if (out_size > 0) out[used] = '\0';
    }
    return lacking;
}

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_BACKEND_H */
