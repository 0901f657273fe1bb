/* SPDX-License-Identifier: MIT */
/* Internal: anvil quantize --target-size / --target-bpw (quantize_target.c):
 * every free tensor's type chosen by measured error under a byte budget.
 *
 * The allocator (qz_allocate) is a pure function over candidate lists, so
 * the tests can hold it to known optima; qz_choose measures the candidates
 * of a quantize plan's free tensors and applies the allocator's answer. */
#ifndef ANVIL_HOST_QUANTIZE_TARGET_H
#define ANVIL_HOST_QUANTIZE_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/quantize.h"
#include "transcode_internal.h"

/* One candidate type of one tensor: its bytes in the file (alignment padding
 * included) and its predicted error. */
typedef struct qz_cand {
    uint32_t type;
    uint64_t bytes;
    double err;
} qz_cand;

/* One tensor the allocator chooses for: candidates in any order; pick is
 * the index into cands of the choice (set by qz_allocate). */
typedef struct qz_item {
    qz_cand *cands;
    size_t n;
    size_t pick;
} qz_item;

/* Choose one candidate per item so that the chosen bytes sum to at most
 * budget with the least total error: per item the lower convex hull of
 * (bytes, error), the Lagrangian walk down the hull slopes (exact on the
 * hull: optimal for the bytes it uses), then the leftover bytes filled
 * greedily (best error saved per byte among all the candidates that fit).
 * Deterministic: ties go to the lower item index, then the smaller
 * candidate. ANVIL_E_INVALID_ARG when even the smallest candidates exceed
 * the budget (*min_bytes says how much they take), or an item has none.
 * *used gets the chosen bytes. */
int qz_allocate(qz_item *items, size_t n, uint64_t budget, uint64_t *min_bytes, uint64_t *used, anvil_error *err);

/* What a plan did with a sensitivity file's stored errors (version 3):
 * tensors whose every candidate came from it, tensors whose key did not
 * match (measured again), tensors it had none for (measured). */
typedef struct qz_err_stats {
    size_t stored, stale, missing;
} qz_err_stats;

/* The request a quantize plan hands to qz_choose. */
typedef struct qz_request {
    uint64_t target_bytes; /* the whole file's budget */
    int pure;              /* one type for every free tensor (the largest that fits) */
    int has_imatrix;       /* an importance matrix was given */
    unsigned threads;
    uint64_t sample_rows;      /* rows measured per tensor: 0 = automatic, UINT64_MAX = all */
    const double *role_weight; /* per qz_category (QC_*), or NULL for 1 */
    /* Measured weights: a tensor's error times kld / relerr(ref) instead of
     * its role weight (NULL: the role weights). */
    const struct anvil_quantize_sens *sens;
    double min_bpw;                     /* candidates of fewer bits per weight left out (0: none) */
    struct anvil_quantize_cache *cache; /* measured errors kept across plans, or NULL */
    qz_err_stats *stats;                /* counted into when not NULL */
} qz_request;

/* The key of a tensor's candidate-error measurement: a 64-bit hash of every
 * input the measured relative errors depend on (the measuring method's
 * version, the tensor's type and shape, the rows sampled and their bytes,
 * the importance matrix's entry or the norm weights standing in for it). */
int qz_err_key(anvil_transcode *t, const anvil_transcode_tensor *it, uint64_t sample_rows, uint64_t *key,
               anvil_error *err);

/* Measure and choose the types of the items marked in is_free (the rest
 * are fixed), then set their dst_type/dst_bytes/why. header_bytes is the
 * file's header (alignment padding included), align its data alignment.
 * pred_err[i] gets each free item's predicted error (0 for fixed ones). */
int qz_choose(anvil_transcode *t, const unsigned char *is_free, uint64_t header_bytes, uint32_t align,
              const qz_request *rq, double *pred_err, char *note, size_t note_size, anvil_error *err);

/* A sensitivity file's response curve (quantize_target.c): the predicted
 * KL divergence at relative error x from the points (r[i], k[i]), i = 0 the
 * reference type (n >= 1, n <= 4): linear through (r[0], k[0]) up to r[0],
 * log-log linear between the points beyond (exponents clamped to [0.5, 4]),
 * the last exponent carried on past the last point. */
double qz_sens_curve(const double *r, const double *k, size_t n, double x);

/* "ROLE=W,..." into w[QZ_TOKEN_EMBD..QZ_OTHER] (1 where not named; NULL spec: all 1). */
int qz_parse_weights(const char *spec, double *w, anvil_error *err);

#endif
