/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the raw importance-matrix loader
 * (anvil_imat_load_buffer: GGUF and legacy .dat, as `anvil imatrix
 * convert / merge / stats` read them): no crash, no leak, no UB on any
 * bytes; a refusal has a message and leaves nothing; what loads has entries
 * of a real shape and merges into an empty matrix twice.
 */
#include <stdint.h>
#include <stdlib.h>

#include "anvil/imat.h"

#include "../common/fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    anvil_imat *im = NULL;
    anvil_error err;
    const uint32_t chunk = size > 0 ? 1u + data[size - 1] : 512u;
    if (anvil_imat_load_buffer(&im, data, size, chunk, NULL, &err) != ANVIL_OK) {
        if (im != NULL || err.message[0] == '\0') abort();
        return 0;
    }
    if (anvil_imat_count(im) == 0) abort();
    for (size_t i = 0; i < anvil_imat_count(im); ++i) {
        anvil_imat_entry e;
        if (anvil_imat_entry_at(im, i, &e) != ANVIL_OK || e.n_per == 0 || e.n_mat == 0) abort();
    }
    anvil_imat *copy = NULL;
    if (anvil_imat_new(&copy, &err) != ANVIL_OK) abort();
    if (anvil_imat_merge(copy, im, &err) != ANVIL_OK || anvil_imat_merge(copy, im, &err) != ANVIL_OK) abort();
    (void)anvil_imat_chunk_count(copy);
    anvil_imat_free(copy);
    anvil_imat_free(im);
    return 0;
}
