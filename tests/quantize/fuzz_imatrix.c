/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the importance-matrix readers (GGUF and legacy .dat):
 * no crash, no leak, no UB on any bytes; what loads is consistent (entries
 * in name order, each findable, values readable), and filtering keeps a
 * subset.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/quantize.h"

#include "../common/fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    anvil_imatrix *im = NULL;
    anvil_error err;
    if (anvil_imatrix_load_buffer(&im, data, size, &err) != ANVIL_OK) {
        if (im != NULL || err.message[0] == '\0') abort();
        return 0;
    }
    const size_t n = anvil_imatrix_count(im);
    const char *prev = NULL;
    volatile float sink = 0;
    for (size_t i = 0; i < n; ++i) {
        anvil_imatrix_entry e;
        if (anvil_imatrix_entry_at(im, i, &e) != ANVIL_OK) abort();
        if (prev != NULL && strcmp(prev, e.name) >= 0) abort();
        prev = e.name;
        if (anvil_imatrix_find(im, e.name) == NULL) abort();
        for (size_t k = 0; k < e.n_values; ++k) sink += e.values[k];
    }
    for (size_t i = 0; i < anvil_imatrix_dataset_count(im); ++i) {
        if (anvil_imatrix_dataset_at(im, i) == NULL) abort();
    }
    const char *keep[] = { "blk" };
    if (anvil_imatrix_filter(im, keep, 1, NULL, 0, &err) != ANVIL_OK || anvil_imatrix_count(im) > n) abort();
    (void)sink;
    anvil_imatrix_free(im);
    return 0;
}
