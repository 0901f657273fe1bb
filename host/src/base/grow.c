/* SPDX-License-Identifier: MIT */
/* anvil__grow_array (see grow.h). */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

#include "anvil/status.h"

int anvil__grow_array(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return ANVIL_OK;
    size_t ncap = *cap == 0 ? 16 : *cap;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) return ANVIL_E_NOMEM;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem) return ANVIL_E_NOMEM;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL) return ANVIL_E_NOMEM;
    *arr = p;
    *cap = ncap;
    return ANVIL_OK;
}
