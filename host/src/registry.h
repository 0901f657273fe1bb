/* Internal: the registry inside a context (plugins, codecs, backends). */
#ifndef ANVIL_HOST_REGISTRY_H
#define ANVIL_HOST_REGISTRY_H

#include "anvil/anvil.h"

/* Plugin id of the plugin that registered the codec for type id, or NULL. */
const char *anvil_registry_codec_plugin(const anvil_ctx *ctx, uint32_t type_id);
/* Loaded codec by name (case-insensitive), or NULL. */
const anvil_codec *anvil_registry_codec_by_name(const anvil_ctx *ctx, const char *name);

#endif
