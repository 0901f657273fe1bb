/* SPDX-License-Identifier: MIT */
/*
 * Internal: a README.md model card's YAML front matter, the subset gguf-py's
 * metadata heuristics read (see hf_card.c).
 */
#ifndef ANVIL_HOST_HF_CARD_H
#define ANVIL_HOST_HF_CARD_H

#include <stddef.h>

#include "json.h"

/* dir/README.md's front matter as an object (*out NULL when there is no
 * README.md or no front matter). Values: STRING, ARRAY of STRING, NULL, or
 * TRUE for a form anvil does not read. */
int hf_card_load(const char *dir, anvil_json_value **out, anvil_error *err);
/* The same from text[0..len) (NUL-terminated after len) read from path
 * (for messages): the fuzz target's entry. ANVIL_OK or ANVIL_E_NOMEM. */
int hf_card_parse(const char *text, size_t len, const char *path, anvil_json_value **out, anvil_error *err);
/* card[key] (NULL when absent); an error naming the key when it has a form
 * anvil does not read. */
int hf_card_value(const anvil_json_value *card, const char *key, const char *dir, const anvil_json_value **out,
                  anvil_error *err);

#endif
