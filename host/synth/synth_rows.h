/* SPDX-License-Identifier: MIT */
/* Deterministic synthetic weight rows (llm-like: heavy tails, a per-row
 * scale, hot columns) for `anvil demo`, `anvil bench` and ptqtp-report. Not
 * to be confused with synth/synth_model.c, which writes a whole synthetic
 * llama-shaped GGUF model through the public API. */
#ifndef ANVIL_SYNTH_ROWS_H
#define ANVIL_SYNTH_ROWS_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64-driven generator; the same seed gives the same tensor. */
typedef struct synth_rng {
    uint64_t s;
} synth_rng;
void synth_seed(synth_rng *r, uint64_t seed);
uint64_t synth_u64(synth_rng *r);
float synth_normal(synth_rng *r);

/* An llm-like weight row: heavy-tailed, a per-row scale, a few hot columns. */
void synth_llm_row(float *x, size_t n, uint64_t seed, size_t row);

#endif
