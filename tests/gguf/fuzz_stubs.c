/* The fuzz targets link the GGUF sources and the type lookups
 * (type_lookup.c) without the plugin registry: they never have a context,
 * so these are never reached with one. */
#include "anvil/anvil.h"
#include "ctx.h"
#include "registry.h"

const codec_rec *anvil__registry_find_codec(const anvil_ctx *ctx, uint32_t type_id) {
    (void)ctx;
    (void)type_id;
    return NULL;
}

const char *anvil__registry_codec_plugin(const anvil_ctx *ctx, uint32_t type_id) {
    (void)ctx;
    (void)type_id;
    return NULL;
}

const anvil_codec *anvil__registry_codec_by_name(const anvil_ctx *ctx, const char *name) {
    (void)ctx;
    (void)name;
    return NULL;
}
