/* SPDX-License-Identifier: MIT */
#include "ref/checks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "anvil/numeric.h"
#include "anvil/status.h"

void anvil_ref_message(char *msg, size_t msg_size, const char *fmt, ...) {
    if (msg == NULL || msg_size == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_size, fmt, ap);
    va_end(ap);
}

int anvil_ref_check_encode_input(const char *type_name, const float *src, size_t n, size_t block_elems, char *msg,
                                 size_t msg_size) {
    if (block_elems == 0 || n % block_elems != 0) {
        anvil_ref_message(msg, msg_size,
                          "%s: %zu elements is not a whole number of %zu-element blocks "
                          "(%zu left over); pad or choose a row length divisible by %zu",
                          type_name, n, block_elems, block_elems ? n % block_elems : n, block_elems);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    return anvil_ref_check_finite(type_name, src, n, 0, msg, msg_size);
}

int anvil_ref_check_finite(const char *type_name, const float *src, size_t n, size_t n_per_row, char *msg,
                           size_t msg_size) {
    const size_t bad = anvil_find_nonfinite(src, n);
    if (bad == n) {
        return ANVIL_OK;
    }
    const float v = src[bad];
    const char *what = isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
    const char *fix = "encoders refuse non-finite input (fix the source tensor or clamp it before quantizing)";
    if (n_per_row == 0) {
        anvil_ref_message(msg, msg_size, "%s: element %zu is %s; %s", type_name, bad, what, fix);
    } else {
        anvil_ref_message(msg, msg_size, "%s: row %zu element %zu (index %zu) is %s; %s", type_name, bad / n_per_row,
                          bad % n_per_row, bad, what, fix);
    }
    return ANVIL_E_NONFINITE;
}
