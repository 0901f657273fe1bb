/* SPDX-License-Identifier: MIT */
/* Input checks every encoder shares, so every codec refuses bad input with
 * the same status and the same wording. */
#ifndef ANVIL_REF_CHECKS_H
#define ANVIL_REF_CHECKS_H

#include <stddef.h>

/* ANVIL_E_BLOCK_MISMATCH when n is not a multiple of block_elems,
 * ANVIL_E_NONFINITE naming the first NaN/Inf index, else ANVIL_OK. */
int anvil_ref_check_encode_input(const char *type_name, const float *src, size_t n, size_t block_elems, char *msg,
                                 size_t msg_size);

/* ANVIL_E_NONFINITE naming the first NaN/Inf of src[0..n) as "element i"
 * (n_per_row 0) or "row r element j" (rows of n_per_row), else ANVIL_OK. */
int anvil_ref_check_finite(const char *type_name, const float *src, size_t n, size_t n_per_row, char *msg,
                           size_t msg_size);

/* Write a formatted message into msg (NULL or 0-size tolerated). */
void anvil_ref_message(char *msg, size_t msg_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
