/* SPDX-License-Identifier: MIT */
/*
 * hf_plan_common: what every architecture's tensor plan shares (hf_tensors
 * and each hf_<arch>.c call these; this file calls none of them): the
 * tensors convert drops from every model, the plain-weight check, an
 * output entry's shape from its source, and freeing a plan.
 */
#include <stdlib.h>

#include "error.h"
#include "hf_internal.h"

int hf_src_dropped(const char *name) {
    return hf_ends_with(name, ".attention.masked_bias") || hf_ends_with(name, ".attention.bias") ||
           hf_ends_with(name, ".rotary_emb.inv_freq");
}

void hf_out_fill(const hf_folder *f, size_t i, hf_out_tensor *o) {
    const anvil_st_tensor *t = f->tensors[i].st;
    o->src = (int)i;
    o->n_dims = (uint32_t)t->rank;
    o->n_elements = t->n_elements;
    for (size_t d = 0; d < t->rank; ++d) o->ne[d] = t->shape[t->rank - 1 - d];
}

int hf_src_check(const hf_folder *f, const hf_src_tensor *s, anvil_error *err) {
    const anvil_st_dtype d = s->st->dtype;
    if (d != ANVIL_ST_F32 && d != ANVIL_ST_F16 && d != ANVIL_ST_BF16 && !(s->scale != NULL && s->st->rank == 2)) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: tensor \"%s\" is %s%s; anvil convert reads F32, F16, BF16 and block-scaled "
                                "FP8 (with its weight_scale_inv) weights",
                                f->dir, f->part_names[s->part], s->name, anvil_st_dtype_name(d),
                                d == ANVIL_ST_F8_E4M3 || d == ANVIL_ST_F8_E5M2 ? " without a weight_scale_inv" : "");
    }
    if (s->st->rank == 0 || s->st->rank > 4) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s/%s: tensor \"%s\" has %zu dims (GGUF holds 1 to 4)",
                                f->dir, f->part_names[s->part], s->name, s->st->rank);
    }
    return ANVIL_OK;
}

void hf_plan_free(hf_out_tensor *ts, size_t n) {
    for (size_t i = 0; ts != NULL && i < n; ++i) {
        free(ts[i].generated);
        free(ts[i].pieces);
    }
    free(ts);
}
