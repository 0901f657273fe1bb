/* SPDX-License-Identifier: MIT */
/* Internal: the process-wide CPU probe. */
#ifndef ANVIL_HOST_CPU_PROBE_H
#define ANVIL_HOST_CPU_PROBE_H

#include <stddef.h>

#include "anvil/abi.h"

/* Probed once per process (thread-safe), ANVIL_CPU_MASK applied. */
const anvil_cpu_info *anvil__cpu_probe(void);
/* Complaints about ANVIL_CPU_MASK tokens that were ignored ("" if none). */
const char *anvil__cpu_mask_warnings(void);
/* Space-separated feature names of f into buf; returns the length. */
size_t anvil__cpu_feature_string(uint64_t f, char *buf, size_t size);
const char *anvil__cpu_arch_name(uint32_t arch);

#endif
