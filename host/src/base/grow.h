/* SPDX-License-Identifier: MIT */
/*
 * Internal: the one way host/src grows an array it appends to. Capacity
 * doubles (from 16), so n appends cost O(n) copies; the byte size is
 * checked against SIZE_MAX before realloc.
 */
#ifndef ANVIL_HOST_GROW_H
#define ANVIL_HOST_GROW_H

#include <stddef.h>

/* Make *arr (elements of elem bytes, *cap of them allocated) hold at least
 * need. ANVIL_OK (also when it already does), or ANVIL_E_NOMEM with *arr
 * and *cap unchanged. */
int anvil__grow_array(void **arr, size_t *cap, size_t need, size_t elem);

#endif
