/* SPDX-License-Identifier: MIT */
/*
 * Fuzz body for the model card reader (host/src/hf/hf_card.c) and the name
 * heuristics it feeds (hf_meta_name.c): any bytes as a README.md give an
 * object of strings, lists of strings, nulls and markers, or no card, never
 * an error but out of memory; every value read as the converter reads it
 * (hf_card_value: a marker refused naming the file and key); every string
 * split as a model id and title-cased, in time linear in its length. libFuzzer
 * target with ANVIL_FUZZ; replayed over corpus_hf_card/ always
 * (fuzz_hf_card_replay).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_card.h"
#include "hf_meta_name.h"

#include "../common/fuzz_target.h"

static void names(const char *s, int64_t total) {
    hf_id_parts p;
    const int rc = hf_model_id_components(s, total, &p);
    if (rc == -2 && strlen(s) <= HF_ID_MAX) abort(); /* refused only over the bound */
    if (rc == 0) {
        char *t = hf_id_to_title(s);
        if (t != NULL && strlen(t) > strlen(s)) abort(); /* title case never grows a name */
        free(t);
    }
    hf_id_parts_free(&p);
}

static void check_value(const anvil_json_value *card, const anvil_json_value *v, int64_t total) {
    const anvil_json_value *got = NULL;
    anvil_error err;
    const int rc = hf_card_value(card, v->key, "fuzz", &got, &err);
    if (v->kind == ANVIL_JSON_TRUE) {
        if (rc != ANVIL_E_UNSUPPORTED || got != NULL || strstr(err.message, "fuzz/README.md") == NULL) abort();
        return;
    }
    if (rc != ANVIL_OK || got == NULL) abort();
    if (v->kind == ANVIL_JSON_STRING) {
        names(v->text, total);
    } else if (v->kind == ANVIL_JSON_ARRAY_BEGIN) {
        for (size_t i = 0; i < v->n_items; ++i) {
            if (v->items[i]->kind != ANVIL_JSON_STRING) abort(); /* a list of another form is a marker */
            names(v->items[i]->text, total);
        }
    } else if (v->kind != ANVIL_JSON_NULL) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 20) return 0;
    char *text = malloc(size + 1);
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    anvil_json_value *card = NULL;
    anvil_error err;
    const int rc = hf_card_parse(text, size, "fuzz/README.md", &card, &err);
    if (rc != ANVIL_OK && rc != ANVIL_E_NOMEM) abort();
    if (card != NULL) {
        if (card->kind != ANVIL_JSON_OBJECT_BEGIN) abort();
        const int64_t total = size > 0 ? (int64_t)data[0] * 1000003 - 100000000 : 0; /* either sign */
        for (size_t i = 0; i < card->n_items; ++i) check_value(card, card->items[i], total);
    }
    anvil__json_free(card);
    free(text);
    return 0;
}
