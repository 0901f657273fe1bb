/* SPDX-License-Identifier: MIT */
/*
 * The one run-time CPU probe of plugins/ref: whether the AVX2 paths of the
 * encoders' searches (cold_enc_search.c, cold_enc_iq1_search.c,
 * kquants_search.c) may run. Decided once per process (thread-safe: a
 * relaxed atomic; racing first calls compute the same answer). Includes
 * nothing from ref/, so any file there may include it.
 */
#ifndef ANVIL_REF_CPU_PROBE_H
#define ANVIL_REF_CPU_PROBE_H

/* 1 where the CPU (and OS) run AVX2, decided once; 0 off x86-64 or without
 * a GNU-compatible compiler. */
int anvil_ref_has_avx2(void);

#endif
