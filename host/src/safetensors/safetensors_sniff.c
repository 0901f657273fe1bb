/* SPDX-License-Identifier: MIT */
/*
 * Content detection: is this safetensors? A safetensors file starts with its
 * header length (u64, little-endian) and the header's JSON; detection looks
 * at the JSON's first significant byte, not at whether the header is valid,
 * so a header that starts with whitespace, is not an object, or is too long
 * still reaches the safetensors reader and gets its reason.
 */
#include <string.h>

#include "anvil/safetensors.h"

static int json_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int json_value_start(unsigned char c) {
    return c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n';
}

ANVIL_API int anvil_st_sniff(const void *head, size_t n) {
    const unsigned char *b = head;
    if (b == NULL || n < 9 || memcmp(b, "GGUF", 4) == 0) {
        return 0;
    }
    /* A length made of printable characters is text, not a length (real
     * ones have zero high bytes). */
    int printable = 1;
    for (int i = 0; i < 8; ++i) {
        printable &= b[i] >= 0x20 && b[i] < 0x7f;
    }
    if (printable) {
        return 0;
    }
    size_t i = 8;
    while (i < n && json_space(b[i])) {
        ++i;
    }
    return i == n || json_value_start(b[i]); /* all whitespace so far: JSON may follow */
}
