/* SPDX-License-Identifier: MIT */
/*
 * Internal: gguf-py's model-id heuristics (metadata.py
 * get_model_id_components, id_to_title) and utility.py's size label (see
 * hf_meta_name.c). The size label and template helpers are declared in
 * hf_internal.h.
 */
#ifndef ANVIL_HOST_HF_META_NAME_H
#define ANVIL_HOST_HF_META_NAME_H

#include <stdint.h>

#include "hf_internal.h"

typedef struct hf_id_parts {
    char *full_name, *org, *basename, *finetune, *version, *size_label; /* NULL = None */
} hf_id_parts;

/* The longest model id read (PATH_MAX): a Hugging Face id is "org/name" of
 * at most 96 + 96 bytes and a local path at most this; a longer
 * _name_or_path or model card entry is refused, never cut (the heuristics
 * are linear, the bound keeps the names they make short). */
#define HF_ID_MAX 4096

/* Split a model id ("org/Name-7B-Instruct-v0.2"); -1 when out of memory, -2
 * when the id is over HF_ID_MAX bytes. */
int hf_model_id_components(const char *model_id, int64_t total_params, hf_id_parts *out);
void hf_id_parts_free(hf_id_parts *p);
/* Metadata.id_to_title (malloc'd). */
char *hf_id_to_title(const char *s);

#endif
