/* SPDX-License-Identifier: MIT */
/*
 * Fuzz body for the INI configuration parser (config.c through inih): any
 * text parses or is refused with file:line, never crashes or leaks. Built as
 * a libFuzzer target with ANVIL_FUZZ, and replayed over corpus_config/ in
 * every build (fuzz_config_replay).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "../common/fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) {
        return 0;
    }
    char *text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0'; /* the text form stops at a NUL; the file form refuses it */
    anvil_config cfg;
    anvil_error err;
    if (anvil__config_parse_text(text, "/etc/anvil/fuzz.ini", &cfg, &err) == ANVIL_OK) {
        anvil__config_free(&cfg);
    } else if (strstr(err.message, "fuzz.ini") == NULL) {
        abort(); /* every refusal names the file */
    }
    free(text);
    return 0;
}
