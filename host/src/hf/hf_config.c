/* SPDX-License-Identifier: MIT */
/*
 * config.json values as the architecture files read them (hf_internal.h):
 * whole numbers in [0, 2^32), numbers, Python truthiness; and the name
 * suffix test every hf_*.c uses. Errors name the folder's config.json, the
 * key and what was there instead.
 */
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"

int hf_ends_with(const char *s, const char *suffix) {
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int hf_cfg_u32(const hf_folder *f, const anvil_json_value *obj, const char *key, const char *cls, int required,
               uint32_t *out, anvil_error *err) {
    const anvil_json_value *v = anvil__json_get(obj, key);
    if (anvil__json_is_null(v)) {
        if (!required) return 0;
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: %s needs \"%s\" (a whole number), which is %s; "
                                "convert_hf_to_gguf.py stops on it too",
                                f->dir, cls, key, v == NULL ? "missing" : "null");
    }
    int64_t x = 0;
    if (anvil__json_i64(v, &x) != 0 || x < 0 || x > (int64_t)UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: \"%s\" must be a whole number in [0, 2^32), not %s", f->dir, key,
                                v->text ? v->text : anvil__json_event_what(v->kind));
    }
    *out = (uint32_t)x;
    return 1;
}

int hf_cfg_num(const hf_folder *f, const anvil_json_value *obj, const char *key, double *out, anvil_error *err) {
    const anvil_json_value *v = anvil__json_get(obj, key);
    if (anvil__json_is_null(v)) return 0;
    if (!anvil__json_is_number(v)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: \"%s\" must be a number, not %s", f->dir, key,
                                anvil__json_event_what(v->kind));
    }
    *out = anvil__json_f64(v);
    return 1;
}

int hf_truthy(const anvil_json_value *v) {
    if (v == NULL) return 0;
    switch (v->kind) {
    case ANVIL_JSON_NULL:
    case ANVIL_JSON_FALSE: return 0;
    case ANVIL_JSON_TRUE: return 1;
    case ANVIL_JSON_STRING: return v->len > 0;
    case ANVIL_JSON_NUMBER: return anvil__json_f64(v) != 0.0;
    default: return v->n_items > 0;
    }
}
