/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the token-file reader (anvil_tokens_parse): no
 * crash, no leak, no UB on any bytes; a refusal has a message and leaves
 * no array; what loads is in the vocabulary and no more ids than there
 * are runs of digits.
 */
#include <stdint.h>
#include <stdlib.h>

#include "anvil/model.h"

#include "../common/fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int32_t *tok = NULL;
    size_t n = 0;
    anvil_error err;
    const uint32_t n_vocab = size > 0 ? (uint32_t)data[0] * 16u : 0u;
    if (anvil_tokens_parse((const char *)data, size, n_vocab, &tok, &n, &err) != ANVIL_OK) {
        if (tok != NULL || n != 0 || err.message[0] == '\0') abort();
        return 0;
    }
    if (n > size / 2 + 1) abort();
    for (size_t i = 0; i < n; ++i) {
        if (tok[i] < 0 || (n_vocab > 0 && (uint32_t)tok[i] >= n_vocab)) abort();
    }
    free(tok);
    return 0;
}
