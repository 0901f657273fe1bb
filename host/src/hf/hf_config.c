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

const anvil_json_value *hf_cfg_rope_params(const hf_folder *f) {
    const anvil_json_value *rp = anvil__json_get(f->config, "rope_parameters");
    if (rp == NULL) rp = anvil__json_get(f->config, "rope_scaling");
    return rp != NULL && rp->kind == ANVIL_JSON_OBJECT_BEGIN ? rp : NULL;
}

/* self.rope_parameters.get("partial_rotary_factor", dflt), with the top
 * level's partial_rotary_factor / rope_pct / rope_percent mirrored in
 * unless rope_parameters is per layer type (TextModel.__init__). */
static int partial_factor(const hf_folder *f, double *out, anvil_error *err) {
    const anvil_json_value *rp = hf_cfg_rope_params(f);
    if (rp != NULL && anvil__json_get(rp, "partial_rotary_factor") != NULL) {
        const int rc = hf_cfg_num(f, rp, "partial_rotary_factor", out, err);
        return rc < 0 ? rc : ANVIL_OK;
    }
    if (rp != NULL && (anvil__json_get(rp, "full_attention") != NULL || anvil__json_get(rp, "sliding_attention")))
        return ANVIL_OK;
    static const char *const keys[] = { "partial_rotary_factor", "rope_pct", "rope_percent", NULL };
    for (size_t i = 0; keys[i] != NULL; ++i) {
        if (anvil__json_get(f->config, keys[i]) == NULL) continue;
        const int rc = hf_cfg_num(f, f->config, keys[i], out, err);
        return rc < 0 ? rc : ANVIL_OK;
    }
    return ANVIL_OK;
}

int hf_cfg_rope_dims(const hf_folder *f, const char *cls, double dflt, uint32_t *out, anvil_error *err) {
    uint32_t head_dim = 0, hidden = 0, heads = 0;
    const int has_hd = hf_cfg_u32(f, f->config, "head_dim", cls, 0, &head_dim, err);
    if (has_hd < 0) return has_hd;
    if (!has_hd) {
        int rc = hf_cfg_u32(f, f->config, "hidden_size", cls, 1, &hidden, err);
        if (rc >= 0) rc = hf_cfg_u32(f, f->config, "num_attention_heads", cls, 1, &heads, err);
        if (rc < 0) return rc;
        if (heads == 0)
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: num_attention_heads is 0", f->dir);
        head_dim = hidden / heads;
    }
    double factor = dflt;
    const int rc = partial_factor(f, &factor, err);
    if (rc < 0) return rc;
    const double d = (double)head_dim * factor;
    if (!(d >= 0.0 && d < 4294967296.0)) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: head_dim %u times partial_rotary_factor %g is not a rope "
                                "dimension count",
                                f->dir, head_dim, factor);
    }
    *out = (uint32_t)d;
    return ANVIL_OK;
}
