/* The fuzz target links the GGUF sources and types.c without the plugin
 * registry: it never has a context, so these are never reached with one. */
#include "anvil/anvil.h"
#include "registry.h"

const anvil_codec *anvil_ctx_codec(const anvil_ctx *ctx, uint32_t type_id) {
    (void)ctx;
    (void)type_id;
    return NULL;
}

const char *anvil_registry_codec_plugin(const anvil_ctx *ctx, uint32_t type_id) {
    (void)ctx;
    (void)type_id;
    return NULL;
}

const anvil_codec *anvil_registry_codec_by_name(const anvil_ctx *ctx, const char *name) {
    (void)ctx;
    (void)name;
    return NULL;
}
