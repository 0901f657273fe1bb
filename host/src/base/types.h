/* SPDX-License-Identifier: MIT */
/* Internal: the built-in type table (types.c), beside the public
 * anvil_type_builtin / anvil_type_bytes. */
#ifndef ANVIL_HOST_TYPES_H
#define ANVIL_HOST_TYPES_H

#include <stdint.h>

/* The ggml type spelled name (case-insensitive): 1 and *id set, or 0. */
int anvil__type_builtin_by_name(const char *name, uint32_t *id);

#endif
