/* SPDX-License-Identifier: MIT */
/* PTQTP reference code (the format: anvil/formats/ptqtp.h).
 *
 * Built as a static library that codec-ptqtp links (its encode, decode and
 * reference dot) and backend-scalar links (the same dot is the scalar
 * backend's kernel, so the referee and the reference cannot drift apart).
 * It includes nothing but the SDK: the plugin directory builds against an
 * installed SDK alone, as a third party's would.
 *
 * `k` (the number of planes) is 2 or 3 everywhere. */
#ifndef ANVIL_PTQTP_REF_H
#define ANVIL_PTQTP_REF_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/blocks.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"

/* ---- encoder (anvil_encode_fn) -------------------------------------------
 * Refuses a length that is not a whole number of 256-element blocks
 * (ANVIL_E_BLOCK_MISMATCH) and NaN/Inf (ANVIL_E_NONFINITE, naming the first
 * bad index), then fits and packs every block independently: the bytes of a
 * block depend only on its 256 inputs, on any thread and any ISA. */
int anvil_ptqtp_encode2(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ptqtp_encode3(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* ---- decoder (anvil_decode_fn): total on any bytes ------------------------ */
void anvil_ptqtp_decode2(const void *src, float *dst, size_t n);
void anvil_ptqtp_decode3(const void *src, float *dst, size_t n);

/* ---- dot against Q8_K (anvil_vec_dot_fn), multiplication-free per weight -- */
void anvil_ptqtp_vec_dot2_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ptqtp_vec_dot3_q8_K(size_t n, float *s, const void *w, const void *a);

/* ---- the fit of one block, for tests and reports -------------------------- */
typedef struct anvil_ptqtp_fit_result {
    anvil_half d[ANVIL_PTQTP_MAX_PLANES];                /* plane scales (binary16 bits) */
    int8_t t[ANVIL_PTQTP_MAX_PLANES][ANVIL_PTQTP_BLOCK]; /* trits, element order */
    unsigned starts;                                     /* starting points tried */
    unsigned steps;                                      /* alternating steps taken, over every start */
    double sse;                                          /* the search's squared error of the chosen scales */
} anvil_ptqtp_fit_result;

/* Fit k planes to 256 finite floats. */
void anvil_ptqtp_fit(const float *w, unsigned k, anvil_ptqtp_fit_result *out);

/* Pack k planes of trits and their scales into one block, and back. */
void anvil_ptqtp_pack(const int8_t t[][ANVIL_PTQTP_BLOCK], const anvil_half *d, unsigned k, uint8_t *block);
void anvil_ptqtp_unpack(const uint8_t *block, unsigned k, int8_t t[][ANVIL_PTQTP_BLOCK], anvil_half *d);

/* One plane (52 bytes) from 256 trits in element order, and back as the
 * 256 digits u = t + 1 (0, 1, 2); shared by ptqtp and ptqtp-s blocks. */
void anvil_ptqtp_pack_plane(const int8_t t[ANVIL_PTQTP_BLOCK], uint8_t *plane);
void anvil_ptqtp_plane_digits(const uint8_t *plane, uint8_t u[ANVIL_PTQTP_BLOCK]);

/* ---- PTQTP-S (anvil/formats/ptqtps.h): ptqtp2s, ptqtp3s ------------------
 * Same contracts as above: encode refuses partial blocks and non-finite
 * input and fits every block alone (the bytes do not depend on threads or
 * ISA); decode is total; the dot is the header's exact-integer reference. */
int anvil_ptqtps_encode2(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ptqtps_encode3(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
void anvil_ptqtps_decode2(const void *src, float *dst, size_t n);
void anvil_ptqtps_decode3(const void *src, float *dst, size_t n);
void anvil_ptqtps_vec_dot2_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ptqtps_vec_dot3_q8_K(size_t n, float *s, const void *w, const void *a);

/* The fit of one 256-weight block with k planes: level v[i] (-4..4 or
 * -13..13), sub-block codes 0..15 and the binary16 block scale; `block`
 * (if not NULL) receives the packed bytes. Returns the squared error of the
 * decoded block against w (in double, from the decoder's own floats). */
double anvil_ptqtps_fit(const float *w, unsigned k, int8_t v[ANVIL_PTQTP_BLOCK], uint8_t code[ANVIL_PTQTPS_NSUB],
                        anvil_half *d, uint8_t *block);

#endif
