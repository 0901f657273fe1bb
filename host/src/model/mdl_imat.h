/* SPDX-License-Identifier: MIT */
/*
 * Internal to host/src/model: the importance-matrix accumulator behind
 * anvil/imat.h (mdl_imat.c), its collection (mdl_imat_collect.c) and its
 * files (mdl_imat_io.c).
 */
#ifndef ANVIL_MDL_IMAT_H
#define ANVIL_MDL_IMAT_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/imat.h"

typedef struct imat_ent {
    char *name;
    float *sums;     /* n_mat x n_per */
    int64_t *counts; /* n_mat */
    uint32_t n_per, n_mat;
} imat_ent;

struct anvil_imat {
    imat_ent *e; /* sorted by name */
    size_t n, cap;
    char **datasets;
    size_t n_datasets;
    uint32_t chunk_size;
};

/* The entry called name with n_per x n_mat values: created zeroed, or the
 * existing one (a single count broadcast to n_mat when the number of values
 * agrees); another shape is an error. */
imat_ent *mdl_imat_entry(anvil_imat *im, const char *name, uint32_t n_per, uint32_t n_mat, anvil_error *err);

#endif
