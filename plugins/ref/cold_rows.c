/* anvil_cold_encode_rows / anvil_cold_encode_one: see cold_rows.h. */
#include "ref/cold_rows.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/checks.h"

int anvil_cold_encode_one(const cold_rows_format *f, const float *src, void *dst, size_t n, char *msg,
                          size_t msg_size) {
    const int rc = anvil_ref_check_encode_input(f->name, src, n, f->block_elems, msg, msg_size);
    return rc != ANVIL_OK ? rc : f->encode_row(src, dst, n, NULL, msg, msg_size);
}

/* Puts "row R: " after the "<name>: " a row encoder's message starts with. */
static void name_row(const cold_rows_format *f, size_t row, char *msg, size_t msg_size) {
    if (msg == NULL || msg_size == 0) {
        return;
    }
    char inner[512];
    const size_t skip = strlen(f->name) + 2;
    const int prefixed = strncmp(msg, f->name, skip - 2) == 0 && msg[skip - 2] == ':';
    snprintf(inner, sizeof inner, "%s", prefixed ? msg + skip : msg);
    anvil_ref_message(msg, msg_size, "%s: row %zu: %s", f->name, row, inner);
}

int anvil_cold_encode_rows(const cold_rows_format *f, const float *src, void *dst, size_t nrows,
                           size_t n_per_row, const float *imatrix, char *msg, size_t msg_size) {
    if (n_per_row % f->block_elems != 0) {
        anvil_ref_message(msg, msg_size,
                          "%s: rows of %zu elements are not a whole number of %zu-element blocks; "
                          "choose a row length divisible by %zu",
                          f->name, n_per_row, f->block_elems, f->block_elems);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    if (nrows != 0 && n_per_row > SIZE_MAX / nrows) {
        anvil_ref_message(msg, msg_size, "%s: %zu rows of %zu elements overflow size_t", f->name, nrows,
                          n_per_row);
        return ANVIL_E_OVERFLOW;
    }
    if (imatrix == NULL && f->needs_imatrix) {
        anvil_ref_message(msg, msg_size,
                          "%s: missing importance matrix: ggml quantizes this very low-bit format only "
                          "with one (llama.cpp refuses the tensor); compute one with llama-imatrix and "
                          "pass it (--imatrix FILE)",
                          f->name);
        return ANVIL_E_NEEDS_IMATRIX;
    }
    if (imatrix != NULL) {
        for (size_t j = 0; j < n_per_row; ++j) {
            if (!(imatrix[j] >= 0.0f) || isinf(imatrix[j])) {
                anvil_ref_message(msg, msg_size,
                                  "%s: importance weight %zu (column %zu) is %g; weights must be finite "
                                  "and non-negative (check the imatrix file)",
                                  f->name, j, j, (double)imatrix[j]);
                return ANVIL_E_INVALID_ARG;
            }
        }
    }
    for (size_t r = 0; r < nrows; ++r) {
        const float *x = src + r * n_per_row;
        const size_t bad = anvil_find_nonfinite(x, n_per_row);
        if (bad != n_per_row) {
            anvil_ref_message(msg, msg_size,
                              "%s: row %zu, element %zu (element %zu of the input) is %s; encoders refuse "
                              "non-finite input (fix the source tensor or clamp it before quantizing)",
                              f->name, r, bad, r * n_per_row + bad,
                              isnan(x[bad]) ? "NaN" : (x[bad] > 0 ? "+Inf" : "-Inf"));
            return ANVIL_E_NONFINITE;
        }
    }
    const size_t row_bytes = n_per_row / f->block_elems * f->block_bytes;
    for (size_t r = 0; r < nrows; ++r) {
        const int rc = f->encode_row(src + r * n_per_row, (uint8_t *)dst + r * row_bytes, n_per_row, imatrix,
                                     msg, msg_size);
        if (rc != ANVIL_OK) {
            name_row(f, r, msg, msg_size);
            return rc;
        }
    }
    return ANVIL_OK;
}
