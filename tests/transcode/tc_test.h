/* SPDX-License-Identifier: MIT */
/* Shared pieces of the transcode / merge-lora suites. */
#ifndef ANVIL_TC_TEST_H
#define ANVIL_TC_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/gguf.h"
#include "anvil/transcode.h"

void tc_add_policy_tests(void);
void tc_add_stream_tests(void);
void tc_add_lora_tests(void);
void tc_add_float_rows_tests(void);

/* The suites' context (the build-tree config, all codec plugins). */
anvil_ctx *tc_ctx(void);
void tc_ctx_release(void);

/* A path in the test's temporary folder (one of 16 rotating buffers). */
const char *tc_path(const char *name);

/* One tensor of a hand-made model: values ~ N(0, scale) from seed, encoded
 * into type; nan_at >= 0 plants a NaN there (F32/F16/BF16 only). */
typedef struct tc_spec {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t seed;
    long nan_at;
} tc_spec;

/* A small GGUF: a few KVs of several wire types, then the tensors. */
int tc_write_model(const char *path, const tc_spec *specs, size_t n);
/* The values tc_write_model encodes for one spec (n floats). */
void tc_spec_values(const tc_spec *s, float *out, size_t n);
uint64_t tc_spec_elements(const tc_spec *s);

/* A tiny llama-shaped synthetic model (synth_model_write). */
int tc_write_synth(const char *path, uint32_t type, uint64_t seed);

/* Plan and run: everything a test inspects afterwards. */
typedef struct tc_result {
    anvil_gguf *src;
    anvil_transcode *t;
    int rc;
    anvil_error err;
} tc_result;
tc_result tc_transcode(const char *in, const char *out, const anvil_transcode_options *o, int dry_run);
void tc_result_free(tc_result *r);
const anvil_transcode_tensor *tc_find(const anvil_transcode *t, const char *name);

/* Whole file into memory (free()); NULL when absent. */
unsigned char *tc_read(const char *path, size_t *size);
/* A tensor decoded to f32 (free()). */
float *tc_decode(const anvil_gguf_tensor *t);

#endif
