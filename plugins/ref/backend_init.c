/* SPDX-License-Identifier: MIT */
/* anvil_ref_backend_fill (see backend_init.h). */
#include "ref/backend_init.h"

#include "anvil/abi.h"
#include "ref/checks.h"

/* Join n NULL-terminated tables into dst[0..ANVIL_REF_BACKEND_MAX). */
static size_t join(const void **dst, const void *const *const *tables, size_t n, int *overflow) {
    size_t count = 0;
    for (size_t t = 0; t < n; ++t) {
        count = anvil_table_append(dst, count, ANVIL_REF_BACKEND_MAX, tables[t], overflow);
    }
    return count;
}

int anvil_ref_backend_fill(anvil_backend *b, anvil_ref_backend_lists *lists, const anvil_ref_backend_tables *t,
                           const char *plugin_id, char *err, size_t err_size) {
    int overflow = 0;
    const size_t nq =
        join((const void **)lists->quantizers, (const void *const *const *)t->quantizers, t->n_quantizers, &overflow);
    const size_t nk =
        join((const void **)lists->kernels, (const void *const *const *)t->kernels, t->n_kernels, &overflow);
    const size_t ne =
        join((const void **)lists->encoders, (const void *const *const *)t->encoders, t->n_encoders, &overflow);
    if (overflow) {
        anvil_ref_message(err, err_size,
                          "%s: kernel table overflow (raise ANVIL_REF_BACKEND_MAX in plugins/ref/backend_init.h)",
                          plugin_id);
        return ANVIL_E_INTERNAL;
    }
    if (t->n_quantizers > 0) {
        b->n_quantizers = nq;
        b->quantizers = lists->quantizers;
    }
    if (t->n_kernels > 0) {
        b->n_kernels = nk;
        b->kernels = lists->kernels;
    }
    if (t->n_encoders > 0) {
        b->n_encoders = ne;
        b->encoders = lists->encoders;
    }
    return ANVIL_OK;
}
