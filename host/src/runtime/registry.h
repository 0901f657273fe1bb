/* Internal: the registry inside a context (plugins, codecs, backends). */
#ifndef ANVIL_HOST_REGISTRY_H
#define ANVIL_HOST_REGISTRY_H

#include "anvil/anvil.h"

/* type_lookup.c: the codec of a type, or an error saying which plugin to load. */
int anvil__codec_for(const anvil_ctx *ctx, uint32_t type, const anvil_codec **out, anvil_error *err);
/* registry.c: plugin id of the plugin that registered the codec for type id, or NULL. */
const char *anvil__registry_codec_plugin(const anvil_ctx *ctx, uint32_t type_id);
/* registry.c: loaded codec by name (case-insensitive), or NULL. */
const anvil_codec *anvil__registry_codec_by_name(const anvil_ctx *ctx, const char *name);

#endif
