/* SPDX-License-Identifier: MIT */
/*
 * ggml's type table: names, block geometry, and which plugin family provides
 * each format. These are format constants (what a GGUF file means), so the
 * host knows them without any plugin loaded; encode/decode still needs the
 * codec plugin. The bottom layer (docs/ARCHITECTURE.md): imports nothing but the error
 * helpers; lookups that also see plugins' types live in type_lookup.c.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "anvil/anvil.h"
#include "error.h"
#include "types.h"

typedef struct builtin_type {
    const char *name;
    uint32_t block_elems;
    uint32_t block_bytes;
    int quantized;
    const char *family;
} builtin_type;

#define T(id, nm, be, bb, q, fam) [id] = { nm, be, bb, q, fam }
static const builtin_type table[ANVIL_TYPE_GGML_COUNT] = {
    T(ANVIL_TYPE_F32, "f32", 1, 4, 0, NULL),
    T(ANVIL_TYPE_F16, "f16", 1, 2, 0, NULL),
    T(ANVIL_TYPE_Q4_0, "q4_0", 32, 18, 1, "codec-q8_0"),
    T(ANVIL_TYPE_Q4_1, "q4_1", 32, 20, 1, "codec-q8_0"),
    T(ANVIL_TYPE_Q5_0, "q5_0", 32, 22, 1, "codec-q8_0"),
    T(ANVIL_TYPE_Q5_1, "q5_1", 32, 24, 1, "codec-q8_0"),
    T(ANVIL_TYPE_Q8_0, "q8_0", 32, 34, 1, "codec-q8_0"),
    T(ANVIL_TYPE_Q8_1, "q8_1", 32, 36, 1, "codec-q8_0"),
    T(ANVIL_TYPE_Q2_K, "q2_K", 256, 84, 1, "codec-kquants"),
    T(ANVIL_TYPE_Q3_K, "q3_K", 256, 110, 1, "codec-kquants"),
    T(ANVIL_TYPE_Q4_K, "q4_K", 256, 144, 1, "codec-kquants"),
    T(ANVIL_TYPE_Q5_K, "q5_K", 256, 176, 1, "codec-kquants"),
    T(ANVIL_TYPE_Q6_K, "q6_K", 256, 210, 1, "codec-kquants"),
    T(ANVIL_TYPE_Q8_K, "q8_K", 256, 292, 1, "codec-kquants"),
    T(ANVIL_TYPE_IQ2_XXS, "iq2_xxs", 256, 66, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ2_XS, "iq2_xs", 256, 74, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ3_XXS, "iq3_xxs", 256, 98, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ1_S, "iq1_s", 256, 50, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ4_NL, "iq4_nl", 32, 18, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ3_S, "iq3_s", 256, 110, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ2_S, "iq2_s", 256, 82, 1, "codec-cold"),
    T(ANVIL_TYPE_IQ4_XS, "iq4_xs", 256, 136, 1, "codec-cold"),
    T(ANVIL_TYPE_I8, "i8", 1, 1, 0, NULL),
    T(ANVIL_TYPE_I16, "i16", 1, 2, 0, NULL),
    T(ANVIL_TYPE_I32, "i32", 1, 4, 0, NULL),
    T(ANVIL_TYPE_I64, "i64", 1, 8, 0, NULL),
    T(ANVIL_TYPE_F64, "f64", 1, 8, 0, NULL),
    T(ANVIL_TYPE_IQ1_M, "iq1_m", 256, 56, 1, "codec-cold"),
    T(ANVIL_TYPE_BF16, "bf16", 1, 2, 0, NULL),
    T(ANVIL_TYPE_TQ1_0, "tq1_0", 256, 54, 1, "codec-ternary"),
    T(ANVIL_TYPE_TQ2_0, "tq2_0", 256, 66, 1, "codec-ternary"),
    T(ANVIL_TYPE_MXFP4, "mxfp4", 32, 17, 1, "codec-cold"),
    T(ANVIL_TYPE_NVFP4, "nvfp4", 64, 36, 1, "codec-cold"),
    T(ANVIL_TYPE_Q1_0, "q1_0", 128, 18, 1, "codec-ternary"),
    T(ANVIL_TYPE_Q2_0, "q2_0", 64, 18, 1, "codec-ternary"),
};
#undef T

static const char *removed_name(uint32_t id) {
    switch (id) {
    case 4: return "Q4_2";
    case 5: return "Q4_3";
    case 31: return "Q4_0_4_4";
    case 32: return "Q4_0_4_8";
    case 33: return "Q4_0_8_8";
    case 36: return "IQ4_NL_4_4";
    case 37: return "IQ4_NL_4_8";
    case 38: return "IQ4_NL_8_8";
    default: return NULL;
    }
}

ANVIL_API int anvil_type_builtin(uint32_t id, anvil_type_info *out, anvil_error *err) {
    const char *removed = removed_name(id);
    if (removed != NULL) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                                "type id %u (%s) was removed from ggml; re-convert the model "
                                "from its original weights",
                                id, removed);
    }
    if (id >= ANVIL_TYPE_GGML_COUNT || table[id].name == NULL) {
        if (id >= ANVIL_TYPE_THIRD_PARTY_FIRST && id <= ANVIL_TYPE_THIRD_PARTY_LAST) {
            return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                                    "type id %u is in the third-party range (1024-2047) and no "
                                    "loaded plugin provides it: a codec plugin is missing; add it "
                                    "to [plugins] load in the config",
                                    id);
        }
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                                "type id %u is not a ggml type anvil knows (ggml ids are 0-%d, "
                                "third-party 1024-2047)",
                                id, ANVIL_TYPE_GGML_COUNT - 1);
    }
    if (out != NULL) {
        out->id = id;
        out->name = table[id].name;
        out->block_elems = table[id].block_elems;
        out->block_bytes = table[id].block_bytes;
        out->is_quantized = table[id].quantized;
        out->family_plugin = table[id].family;
    }
    return ANVIL_OK;
}

int anvil__type_builtin_by_name(const char *name, uint32_t *id) {
    for (uint32_t i = 0; i < ANVIL_TYPE_GGML_COUNT; ++i) {
        if (table[i].name != NULL && strcasecmp(table[i].name, name) == 0) {
            *id = i;
            return 1;
        }
    }
    return 0;
}

ANVIL_API int anvil_type_bytes(const anvil_type_info *t, uint64_t n, uint64_t *bytes, anvil_error *err) {
    if (t == NULL || t->block_elems == 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "type info missing");
    }
    if (n % t->block_elems != 0) {
        return anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                                "%s: %llu elements is not a whole number of %u-element blocks", t->name,
                                (unsigned long long)n, t->block_elems);
    }
    const uint64_t blocks = n / t->block_elems;
    if (blocks > UINT64_MAX / t->block_bytes) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "%s: %llu elements overflow a byte count", t->name,
                                (unsigned long long)n);
    }
    *bytes = blocks * t->block_bytes;
    return ANVIL_OK;
}
