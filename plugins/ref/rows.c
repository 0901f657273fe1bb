/* SPDX-License-Identifier: MIT */
#include "ref/rows.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "anvil/status.h"
#include "ref/checks.h"

/* "<name>: row R: <rest>" from a row encoder's "<name>: <rest>". */
static void name_row(const char *name, size_t row, char *msg, size_t msg_size) {
    if (msg == NULL || msg_size == 0) {
        return;
    }
    char inner[512];
    const size_t len = strlen(name);
    const int prefixed = strncmp(msg, name, len) == 0 && msg[len] == ':' && msg[len + 1] == ' ';
    snprintf(inner, sizeof inner, "%s", prefixed ? msg + len + 2 : msg);
    anvil_ref_message(msg, msg_size, "%s: row %zu: %s", name, row, inner);
}

int anvil_ref_encode_rows(const anvil_ref_row_format *f, const float *src, void *dst, size_t nrows, size_t n_per_row,
                          const float *imatrix, char *msg, size_t msg_size) {
    if (f->block_elems == 0 || n_per_row % f->block_elems != 0) {
        anvil_ref_message(msg, msg_size,
                          "%s: rows of %zu elements are not a whole number of %zu-element blocks "
                          "(%zu left over); choose a row length divisible by %zu",
                          f->name, n_per_row, f->block_elems, f->block_elems ? n_per_row % f->block_elems : n_per_row,
                          f->block_elems);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    const size_t row_bytes = n_per_row / f->block_elems * f->block_bytes;
    if (nrows != 0 && (n_per_row > SIZE_MAX / nrows || row_bytes > SIZE_MAX / nrows)) {
        anvil_ref_message(msg, msg_size, "%s: %zu rows of %zu elements overflow the address space", f->name, nrows,
                          n_per_row);
        return ANVIL_E_OVERFLOW;
    }
    const size_t n = nrows * n_per_row;
    if (n > 0 && (src == NULL || dst == NULL)) {
        anvil_ref_message(msg, msg_size, "%s: NULL %s buffer", f->name, src == NULL ? "source" : "destination");
        return ANVIL_E_INVALID_ARG;
    }
    if (imatrix == NULL && f->needs_imatrix) {
        anvil_ref_message(msg, msg_size,
                          "%s: missing importance matrix: this very low-bit format needs one (without it "
                          "the result is garbage, so ggml quantizes it only with one and llama.cpp bails "
                          "out); compute one with llama-imatrix and pass it (--imatrix FILE)",
                          f->name);
        return ANVIL_E_NEEDS_IMATRIX;
    }
    if (imatrix != NULL) {
        for (size_t j = 0; j < n_per_row; ++j) {
            if (!isfinite(imatrix[j])) {
                anvil_ref_message(msg, msg_size,
                                  "%s: importance weight of column %zu is %g; weights must be finite "
                                  "(check the importance matrix)",
                                  f->name, j, (double)imatrix[j]);
                return ANVIL_E_INVALID_ARG;
            }
        }
    }
    const int rc = anvil_ref_check_finite(f->name, src, n, n_per_row ? n_per_row : 1, msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    unsigned char *out = dst;
    for (size_t r = 0; r < nrows; ++r) {
        if (f->encode_row_checked == NULL) {
            f->encode_row(src + r * n_per_row, out + r * row_bytes, n_per_row, imatrix);
            continue;
        }
        const int rrc =
            f->encode_row_checked(src + r * n_per_row, out + r * row_bytes, n_per_row, imatrix, msg, msg_size);
        if (rrc != ANVIL_OK) {
            name_row(f->name, r, msg, msg_size);
            return rrc;
        }
    }
    return ANVIL_OK;
}

int anvil_ref_encode_one(const anvil_ref_row_format *f, const float *src, void *dst, size_t n, char *msg,
                         size_t msg_size) {
    const int rc = anvil_ref_check_encode_input(f->name, src, n, f->block_elems, msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (f->encode_row_checked != NULL) {
        return f->encode_row_checked(src, dst, n, NULL, msg, msg_size);
    }
    f->encode_row(src, dst, n, NULL);
    return ANVIL_OK;
}
