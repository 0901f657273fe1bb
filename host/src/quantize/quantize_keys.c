/* SPDX-License-Identifier: MIT */
/*
 * The model's keys as llama.cpp's loader reads them, with --override-kv
 * applied the way the loader applies it: get_key<uint32_t> (an INT override
 * wins) and get_key_or_arr of a per-layer value (a scalar, or an array of
 * one value per layer). Below the plan (quantize_plan.c) and the
 * architecture checks (quantize_arch.c), which both read keys through here.
 */
#include <inttypes.h>
#include <string.h>

#include "error.h"
#include "quantize_internal.h"

const anvil_kv_override *qz_find_override(const anvil_quantize_options *o, const char *key) {
    for (size_t i = 0; i < o->n_kv_overrides; ++i) {
        if (strcmp(o->kv_overrides[i].key, key) == 0) return &o->kv_overrides[i];
    }
    return NULL;
}

int qz_key_u32(anvil_transcode *t, const anvil_quantize_options *o, const char *key, uint32_t *v, int *found,
               anvil_error *err) {
    *found = 0;
    const anvil_kv_override *ov = qz_find_override(o, key);
    if (ov != NULL) {
        if (ov->tag == ANVIL_KV_OVERRIDE_INT) {
            *v = (uint32_t)ov->i;
            *found = 1;
            return ANVIL_OK;
        }
        int rc = tc_warn(t, err, "--override-kv %s: %s expects an int; the file's value is used", key, key);
        if (rc != ANVIL_OK) return rc;
    }
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(t->src, key);
    if (kv == NULL) return ANVIL_OK;
    if (kv->type != ANVIL_GGUF_TYPE_U32) {
        const char *tn = anvil_gguf_type_name(kv->type);
        return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE,
                                "key %s has wrong type %s but expected type u32 (llama.cpp's loader refuses it "
                                "too)",
                                key, tn ? tn : "?");
    }
    anvil_gguf_value val;
    anvil_gguf_kv_value(kv, &val);
    *v = (uint32_t)val.u;
    *found = 1;
    return ANVIL_OK;
}

int qz_key_layers(anvil_transcode *t, const anvil_quantize_options *o, const char *key, uint32_t n_layer,
                  uint32_t *first, uint32_t *max, anvil_error *err) {
    if (max != NULL) *max = 0;
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(t->src, key);
    if (kv == NULL) return ANVIL_OK;
    if (kv->type != ANVIL_GGUF_TYPE_ARRAY) {
        int found;
        uint32_t x = 0;
        const int rc = qz_key_u32(t, o, key, &x, &found, err);
        if (rc == ANVIL_OK && found) {
            if (first != NULL) *first = x;
            if (max != NULL) *max = x;
        }
        return rc;
    }
    anvil_gguf_value val;
    anvil_gguf_kv_value(kv, &val);
    const uint32_t et = val.a.elem_type;
    if (et != ANVIL_GGUF_TYPE_U32 && et != ANVIL_GGUF_TYPE_I32 && et != ANVIL_GGUF_TYPE_BOOL) {
        return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE, "%s has wrong array element type %s (u32 expected)", key,
                                anvil_gguf_type_name(et) ? anvil_gguf_type_name(et) : "?");
    }
    if (val.a.count != n_layer) {
        return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE,
                                "key %s has wrong array length; expected %u, got %" PRIu64, key, n_layer,
                                val.a.count);
    }
    for (uint64_t i = 0; i < val.a.count; ++i) {
        anvil_gguf_value e;
        if (anvil_gguf_array_get(&val.a, i, &e) != ANVIL_OK) break;
        const uint32_t x = et == ANVIL_GGUF_TYPE_BOOL ? (uint32_t)(e.b != 0)
                                                      : (uint32_t)(e.in_u64 ? e.u : (uint64_t)e.i);
        if (i == 0 && first != NULL) *first = x;
        if (max != NULL && x > *max) *max = x;
    }
    return ANVIL_OK;
}
