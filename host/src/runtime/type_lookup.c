/* SPDX-License-Identifier: MIT */
/*
 * Type and codec lookups that need a context: a third-party type (ids
 * 1024-2047) exists only while the plugin that registers it is loaded, so
 * these ask the registry first and the built-in table (types.c) second. They
 * sit beside the registry (docs/ARCHITECTURE.md): the built-in table below them imports
 * nothing, the context and everything above call down into them.
 */
#include <stdio.h>

#include "anvil/anvil.h"
#include "ctx.h"
#include "error.h"
#include "registry.h"
#include "types.h"

/* Resolve a type to its codec, with the message a user needs when absent. */
int anvil__codec_for(const anvil_ctx *ctx, uint32_t type, const anvil_codec **out, anvil_error *err) {
    const codec_rec *c = anvil__registry_find_codec(ctx ? &ctx->reg : NULL, type);
    if (c != NULL) {
        *out = &c->codec;
        return ANVIL_OK;
    }
    anvil_type_info t;
    anvil_error e;
    if (anvil_type_builtin(type, &t, &e) != ANVIL_OK) {
        return anvil__error_set(err, e.code, "%s", e.message);
    }
    return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                            "type %s (id %u): no loaded plugin provides it; it comes with the %s plugin "
                            "(add it to [plugins] load in %s)",
                            t.name, type, t.family_plugin ? t.family_plugin : "?",
                            ctx ? ctx->cfg.path : "the config");
}

int anvil__type_lookup_in(const anvil_registry *reg, uint32_t id, anvil_type_info *out, anvil_error *err) {
    if (reg != NULL) {
        const codec_rec *r = anvil__registry_find_codec(reg, id);
        const anvil_codec *c = r != NULL ? &r->codec : NULL;
        if (c != NULL && id >= ANVIL_TYPE_THIRD_PARTY_FIRST) {
            if (out != NULL) {
                out->id = id;
                out->name = c->name;
                out->block_elems = c->block_elems;
                out->block_bytes = c->block_bytes;
                out->is_quantized = 1;
                out->family_plugin = anvil__registry_codec_plugin(reg, id);
            }
            return ANVIL_OK;
        }
    }
    return anvil_type_builtin(id, out, err);
}

const char *anvil__type_name_in(const anvil_registry *reg, uint32_t id) {
    anvil_type_info t;
    return anvil__type_lookup_in(reg, id, &t, NULL) == ANVIL_OK ? t.name : "?";
}

int anvil__type_from_name_in(const anvil_registry *reg, const char *name, uint32_t *id, anvil_error *err) {
    if (name == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "type name is NULL");
    }
    if (anvil__type_builtin_by_name(name, id)) return ANVIL_OK;
    if (reg != NULL) {
        const anvil_codec *c = anvil__registry_codec_by_name(reg, name);
        if (c != NULL) {
            *id = c->type_id;
            return ANVIL_OK;
        }
    }
    return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                            "unknown type '%s' (ggml spelling, e.g. q4_0, q4_K, iq4_xs, f16; "
                            "`anvil codec list` shows what is loaded)",
                            name);
}

ANVIL_API int anvil_type_lookup(const anvil_ctx *ctx, uint32_t id, anvil_type_info *out, anvil_error *err) {
    return anvil__type_lookup_in(ctx ? &ctx->reg : NULL, id, out, err);
}

ANVIL_API int anvil_type_from_name(const anvil_ctx *ctx, const char *name, uint32_t *id, anvil_error *err) {
    return anvil__type_from_name_in(ctx ? &ctx->reg : NULL, name, id, err);
}

ANVIL_API const char *anvil_type_name(const anvil_ctx *ctx, uint32_t id) {
    return anvil__type_name_in(ctx ? &ctx->reg : NULL, id);
}
