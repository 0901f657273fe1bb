/* SPDX-License-Identifier: MIT */
/*
 * ggml as an oracle: dlopen the ggml build shipped by the npm package
 * @node-llama-cpp/linux-x64 (libggml-base.so and the best-scoring
 * libggml-cpu-*.so for this CPU) and hand out its functions.
 *
 * Used by the parity program (byte/bit comparisons) and by `anvil bench`
 * (ggml's kernels timed on the same data). Nothing here is linked against
 * ggml: when it is absent every caller says so and carries on.
 */
#ifndef ANVIL_GGML_ORACLE_H
#define ANVIL_GGML_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ggml's signatures. */
typedef void (*ggml_to_float_fn)(const void *x, float *y, int64_t k);
typedef void (*ggml_from_float_fn)(const float *x, void *y, int64_t k);
typedef void (*ggml_vec_dot_fn)(int n, float *s, size_t bs, const void *x, size_t bx, const void *y, size_t by,
                                int nrc);
typedef size_t (*ggml_quantize_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                         int64_t n_per_row, const float *imatrix);

typedef struct ggml_oracle {
    void *base;     /* libggml-base.so handle */
    void *cpu;      /* best libggml-cpu-*.so handle (may be NULL) */
    void *portable; /* libggml-cpu-x64.so: plain C, no FMA (may be NULL) */
    char dir[1024];
    char cpu_variant[64]; /* e.g. "haswell", "icelake" */
    ggml_quantize_chunk_fn quantize_chunk;
    void (*quantize_init)(int type);
    bool (*quantize_requires_imatrix)(int type); /* C bool in ggml */
} ggml_oracle;

/* Open from dir (NULL: $ANVIL_GGML_DIR, then the build tree's npm folder).
 * Returns 0 on success; on failure fills why and returns -1. */
int ggml_oracle_open(ggml_oracle *o, const char *dir, char *why, size_t why_size);
void ggml_oracle_close(ggml_oracle *o);

/* Symbol from libggml-base (first) or the CPU library; NULL if absent. */
void *ggml_oracle_sym(const ggml_oracle *o, const char *name);

/* dequantize_row_<name> (type traits to_float) and quantize_row_<name>_ref. */
ggml_to_float_fn ggml_oracle_to_float(const ggml_oracle *o, int type);
ggml_from_float_fn ggml_oracle_from_float_ref(const ggml_oracle *o, int type);
/* ggml_vec_dot_<w>_<act> from the CPU library, e.g. ("q4_K", "q8_K"). */
ggml_vec_dot_fn ggml_oracle_vec_dot(const ggml_oracle *o, const char *wname, const char *aname);
/* The same dot from ggml's baseline x86-64 build (libggml-cpu-x64.so): ggml's
 * portable C as written (the best variant for a modern CPU is compiled with
 * FMA contraction, even its *_generic functions), which is the arithmetic
 * anvil's scalar reference follows bit for bit. NULL when absent. */
ggml_vec_dot_fn ggml_oracle_vec_dot_portable(const ggml_oracle *o, const char *wname, const char *aname);
/* quantize_row_<name>_ref: through the type traits, else by name (Q8_K's
 * traits carry no from_float_ref although the function is exported). */
ggml_from_float_fn ggml_oracle_quantize_ref(const ggml_oracle *o, int type, const char *name);

#endif
