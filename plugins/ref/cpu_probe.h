/* SPDX-License-Identifier: MIT */
/*
 * The one run-time CPU probe of plugins/ref: whether the AVX2 and AVX-512
 * paths of the encoders' searches (cold_enc_search.c,
 * cold_enc_iq1_search.c, kquants_search.c) may run. The CPU is probed once
 * per process (thread-safe: a relaxed atomic; racing first calls compute
 * the same answer); the host's view of it (ANVIL_CPU_MASK applied), which
 * each plugin passes on from its init, can hide a feature further.
 * Includes nothing from ref/, so any file there may include it.
 */
#ifndef ANVIL_REF_CPU_PROBE_H
#define ANVIL_REF_CPU_PROBE_H

#include "anvil/abi.h"

/* 1 where the CPU (and OS) run AVX2 and the host's features do not hide
 * it; 0 off x86-64 or without a GNU-compatible compiler. */
int anvil_ref_has_avx2(void);

/* The same for AVX-512F (the encoders' 16-lane searches). */
int anvil_ref_has_avx512(void);

/* Hides from the two probes above what the host's CPU features lack (its
 * features after ANVIL_CPU_MASK): each plugin whose encoders use them calls
 * this from its init, with host->cpu (NULL, or an x86-64 field it does not
 * have: no change). Every plugin of a process gets the same host view. */
void anvil_ref_cpu_from_host(const anvil_host_services *host);

#endif
