/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the sensitivity file's parser
 * (anvil_quantize_sens_parse): no crash, no leak, no UB on any bytes; a
 * refusal says why and leaves nothing; what loads has at least one entry
 * and a version of 1, 2 or 3 (2: every entry's low-bit points, 1-3 of
 * them; 3: and optionally its stored errors, their key 16 hex digits).
 */
#include <stdint.h>
#include <stdlib.h>

#include "anvil/quantize.h"

#include "../common/fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    anvil_quantize_sens *s = NULL;
    anvil_error err;
    if (anvil_quantize_sens_parse(&s, data, size, &err) != ANVIL_OK) {
        if (s != NULL || err.message[0] == '\0') abort();
        return 0;
    }
    if (anvil_quantize_sens_count(s) == 0) abort();
    const int v = anvil_quantize_sens_version(s);
    if (v < 1 || v > 3) abort();
    anvil_quantize_sens_free(s);
    return 0;
}
