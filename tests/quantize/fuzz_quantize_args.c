/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the option strings anvil quantize takes from the
 * command line and from a --tensor-type-file: --override-kv, --tensor-type,
 * the file's items, and the ECMAScript matcher itself (the first line is a
 * pattern, the rest names to search). No crash, no leak, no UB; a parse that
 * succeeds gives sane values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/quantize.h"
#include "ecma_regex.h"

#include "../common/fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (s == NULL) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    anvil_error err;
    anvil_kv_override o;
    if (anvil_kv_override_parse(s, &o, &err) == ANVIL_OK) {
        if (o.key[0] == '\0' || strlen(o.key) > 127 || strlen(o.str) > 127) abort();
    }
    char *pat = NULL;
    uint32_t ty = 0;
    if (anvil_quantize_parse_tensor_type(NULL, s, &pat, &ty, &err) == ANVIL_OK) {
        if (pat == NULL || pat[0] == '\0') abort();
        free(pat);
    }
    anvil_transcode_rule *rules = NULL;
    size_t n = 0;
    (void)anvil_quantize_parse_tensor_type_file(NULL, (const char *)data, size, &rules, &n, &err);
    anvil_quantize_rules_free(rules, n);
    /* The matcher: pattern up to the first newline, subjects after it. */
    const char *nl = memchr(data, '\n', size);
    const size_t plen = nl ? (size_t)(nl - (const char *)data) : size;
    ecma_re *re = NULL;
    char why[256];
    if (ecma_re_compile((const char *)data, plen, &re, why, sizeof why) == 0) {
        const char *p = nl ? nl + 1 : (const char *)data + size;
        const char *end = (const char *)data + size;
        while (p <= end) {
            const char *q = memchr(p, '\n', (size_t)(end - p));
            const size_t len = q ? (size_t)(q - p) : (size_t)(end - p);
            const int r = ecma_re_search(re, p, len);
            if (r < -1 || r > 1) abort();
            if (q == NULL) break;
            p = q + 1;
        }
        ecma_re_free(re);
    } else if (why[0] == '\0') {
        abort();
    }
    free(s);
    return 0;
}
