/* SPDX-License-Identifier: MIT */
/*
 * The option strings llama-quantize takes, read as it reads them:
 * --override-kv KEY=TYPE:VALUE (common's string_parse_kv_override),
 * --tensor-type PATTERN=TYPE and --tensor-type-file (quantize.cpp). Every
 * string is untrusted: lengths are checked before copying, and an error
 * says which item and why.
 */
#include <stdlib.h>
#include <string.h>

#include "anvil/quantize.h"
#include "ecma_regex.h"
#include "error.h"

ANVIL_API int anvil_kv_override_parse(const char *s, anvil_kv_override *out, anvil_error *err) {
    anvil__error_clear(err);
    if (s == NULL || out == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    memset(out, 0, sizeof *out);
    const char *sep = strchr(s, '=');
    if (sep == NULL || sep - s >= 128) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "malformed KV override '%.200s': expected KEY=TYPE:VALUE with a key of at most "
                                "127 bytes, e.g. general.name=str:mine",
                                s);
    }
    const size_t klen = (size_t)(sep - s);
    if (klen == 0) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "KV override '%.200s' has an empty key", s);
    memcpy(out->key, s, klen);
    out->key[klen] = '\0';
    const char *v = sep + 1;
    if (strncmp(v, "int:", 4) == 0) {
        out->tag = ANVIL_KV_OVERRIDE_INT;
        out->i = strtoll(v + 4, NULL, 10); /* atol: what does not parse is 0 */
    } else if (strncmp(v, "float:", 6) == 0) {
        out->tag = ANVIL_KV_OVERRIDE_FLOAT;
        out->f = strtod(v + 6, NULL);
    } else if (strncmp(v, "bool:", 5) == 0) {
        out->tag = ANVIL_KV_OVERRIDE_BOOL;
        if (strcmp(v + 5, "true") == 0) {
            out->b = 1;
        } else if (strcmp(v + 5, "false") == 0) {
            out->b = 0;
        } else {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "invalid boolean value for KV override '%.200s': true or false", s);
        }
    } else if (strncmp(v, "str:", 4) == 0) {
        out->tag = ANVIL_KV_OVERRIDE_STR;
        const size_t n = strlen(v + 4);
        if (n > 127) {
            return anvil__error_set(
                err, ANVIL_E_INVALID_ARG,
                "malformed KV override '%.60s...': the value cannot exceed 127 bytes (it has %zu)", s, n);
        }
        memcpy(out->str, v + 4, n + 1);
    } else {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "invalid type for KV override '%.200s': the value must start with int:, float:, "
                                "bool: or str:",
                                s);
    }
    return ANVIL_OK;
}

/* One REGEX=TYPE of at most len bytes (stops at a NUL, as c_str()), read as
 * llama-quantize reads --tensor-type: split at the first '=', the pattern
 * lower-cased. Messages start with the item quoted; the caller names the
 * option. */
static int parse_item(const anvil_ctx *ctx, const char *arg, size_t len, char **pattern, uint32_t *type,
                      anvil_error *err) {
    const char *nul = memchr(arg, '\0', len);
    if (nul != NULL) len = (size_t)(nul - arg);
    const char *sep = memchr(arg, '=', len);
    if (sep == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "'%.*s': expected REGEX=TYPE, e.g. attn_v=q8_0",
                                (int)(len > 200 ? 200 : len), arg);
    }
    const size_t plen = (size_t)(sep - arg);
    if (plen == 0)
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "'%.*s': missing tensor name", (int)(len > 200 ? 200 : len),
                                arg);
    const size_t tlen = len - plen - 1;
    if (tlen == 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "'%.*s': missing quantization type",
                                (int)(len > 200 ? 200 : len), arg);
    }
    char tname[64];
    if (tlen >= sizeof tname) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE, "'%.*s': invalid quantization type",
                                (int)(len > 200 ? 200 : len), arg);
    }
    memcpy(tname, sep + 1, tlen);
    tname[tlen] = '\0';
    anvil_error e;
    if (anvil_type_from_name(ctx, tname, type, &e) != ANVIL_OK) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE, "'%.*s': invalid quantization type: %s",
                                (int)(len > 200 ? 200 : len), arg, e.message);
    }
    char *p = malloc(plen + 1);
    if (p == NULL) return anvil__nomem(err);
    /* llama-quantize lower-cases the pattern (so \D reads as \d). */
    for (size_t i = 0; i < plen; ++i) {
        const unsigned char c = (unsigned char)arg[i];
        p[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    p[plen] = '\0';
    ecma_re *re = NULL;
    char why[256];
    if (ecma_re_compile(p, plen, &re, why, sizeof why) != 0) {
        const int rc = anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                        "'%.*s': not a valid ECMAScript regular expression (llama.cpp's "
                                        "dialect): %s",
                                        (int)(len > 200 ? 200 : len), arg, why);
        free(p);
        return rc;
    }
    ecma_re_free(re);
    *pattern = p;
    return ANVIL_OK;
}

ANVIL_API int anvil_tensor_pattern_check(const char *pattern, anvil_error *err) {
    anvil__error_clear(err);
    if (pattern == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL pattern");
    ecma_re *re = NULL;
    char why[256];
    if (ecma_re_compile(pattern, strlen(pattern), &re, why, sizeof why) != 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "not a valid ECMAScript regular expression (llama.cpp's dialect): %s", why);
    }
    ecma_re_free(re);
    return ANVIL_OK;
}

ANVIL_API int anvil_quantize_parse_tensor_type(const anvil_ctx *ctx, const char *arg, char **pattern, uint32_t *type,
                                               anvil_error *err) {
    anvil__error_clear(err);
    if (arg == NULL || pattern == NULL || type == NULL)
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    *pattern = NULL;
    return parse_item(ctx, arg, strlen(arg), pattern, type, err);
}

ANVIL_API void anvil_quantize_rules_free(anvil_transcode_rule *rules, size_t n) {
    if (rules == NULL) return;
    for (size_t i = 0; i < n; ++i) free((char *)rules[i].pattern);
    free(rules);
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

ANVIL_API int anvil_quantize_parse_tensor_type_file(const anvil_ctx *ctx, const char *text, size_t len,
                                                    anvil_transcode_rule **rules, size_t *n, anvil_error *err) {
    anvil__error_clear(err);
    if ((text == NULL && len > 0) || rules == NULL || n == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    }
    size_t at = 0, line = 1;
    while (at < len) {
        while (at < len && is_space((unsigned char)text[at])) {
            if (text[at] == '\n') line++;
            at++;
        }
        if (at >= len) break;
        const size_t start = at;
        while (at < len && !is_space((unsigned char)text[at])) at++;
        char *pattern = NULL;
        uint32_t type = 0;
        int rc = parse_item(ctx, text + start, at - start, &pattern, &type, err);
        if (rc != ANVIL_OK) {
            anvil__error_prefix(err, "line %zu", line);
            return rc;
        }
        anvil_transcode_rule *v = realloc(*rules, (*n + 1) * sizeof *v);
        if (v == NULL) {
            free(pattern);
            return anvil__nomem(err);
        }
        *rules = v;
        v[*n].pattern = pattern;
        v[*n].type = type;
        ++*n;
    }
    return ANVIL_OK;
}
