/* SPDX-License-Identifier: MIT */
/*
 * Byte-exact encoders for the lattice i-quants: what ggml_quantize_chunk
 * writes, with or without an importance matrix.
 *  - IQ3_XXS, IQ3_S, IQ2_S (without an importance matrix also
 *    quantize_row_<t>_ref) and IQ1_M (ggml has no _ref for it): both ways,
 *    anvil_ref_encode_<t> being the unweighted single-row entry;
 *  - IQ2_XXS, IQ2_XS, IQ1_S: ggml encodes them only with an importance
 *    matrix, so they have only the row-wise entry, which answers
 *    ANVIL_E_NEEDS_IMATRIX to none.
 *
 * Each is ggml's search ported operation for operation: a sweep of trial
 * scales (or, for IQ1, an exhaustive split search), rounding every group
 * of 4 or 8 magnitudes to level codes, snapping off-grid code vectors to
 * the best of a precomputed candidate list (cold_enc_lattice.h), a
 * least-squares rescale, then the super-block scale. With an importance
 * matrix only the weights change: qw sqrt(sigma2 + x^2) per element.
 * One rounding different, one candidate visited in another order, and a
 * lattice index flips, so the float expressions keep ggml's association and
 * the candidate lists ggml's order.
 *
 * Refusals, all before or instead of writing a result that could differ
 * from ggml:
 *  - ANVIL_E_BLOCK_MISMATCH: n not a multiple of 256;
 *  - ANVIL_E_NONFINITE: NaN/Inf (ref/checks.h wording, first bad index);
 *  - ANVIL_E_UNSUPPORTED: finite values so large that the search's weighted
 *    squared errors overflow to Inf/NaN (magnitudes from about 1e10 up;
 *    where exactly depends on the data and the importance weights). There
 *    ggml itself produces no encoding: its IQ3/IQ2 search fails an
 *    assertion and aborts the process, and its IQ1 search falls back to a
 *    loop that reads past the end of its input, then aborts. The refusal is raised at exactly those
 *    points (same arithmetic, same test), never more widely: anvil-parity
 *    runs ggml in a child process on such rows and checks that anvil
 *    refuses where ggml dies and matches it byte for byte elsewhere.
 *    Nothing byte-exact exists to match, so the encoder says so instead of
 *    writing a guess; dst may then hold partial output.
 *  - ANVIL_E_INTERNAL: the search tables failed their self-check.
 *
 * Thread-safe; the search tables are built once per process, by
 * anvil_ref_cold_lattice_init, which the first encoder to need them calls
 * (after the first time it only checks a flag); codec-cold's init hook
 * checks the codebooks alone (anvil_ref_cold_codebook_check).
 */
#ifndef ANVIL_REF_COLD_ENC_GRID_H
#define ANVIL_REF_COLD_ENC_GRID_H

#include <stddef.h>

int anvil_ref_encode_iq3_xxs(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_iq3_s(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_iq2_s(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_iq1_m(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Row-wise, optionally importance-weighted (anvil_encode_rows_fn; checks
 * and refusals in ref/rows.h; refusals of a row name it). */
int anvil_ref_encode_rows_iq3_xxs(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                  char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq3_s(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq2_s(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq1_m(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq2_xxs(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                  char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq2_xs(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                 char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq1_s(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);

/* Builds the encoders' search tables once (thread-safe, idempotent).
 * ANVIL_OK or ANVIL_E_INTERNAL. */
int anvil_ref_cold_lattice_init(void);
/* The codebooks' self-check without building the tables (~0.1 ms).
 * ANVIL_OK or ANVIL_E_INTERNAL. */
int anvil_ref_cold_codebook_check(void);

#endif
