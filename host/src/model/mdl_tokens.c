/* SPDX-License-Identifier: MIT */
/*
 * Token ids from a file, and text to ids.
 *
 * anvil_tokens_parse is the reader a fuzz target drives: whitespace
 * (space, tab, CR, LF) separated decimal ids; anything else -- a sign, a
 * letter, a NUL, an id past INT32_MAX or past the vocabulary -- is refused
 * naming the byte offset and what was there. At most MAX_TOKENS ids, read
 * in one pass with checked arithmetic; the array grows by doubling.
 *
 * anvil_model_tokenize is the one place text becomes ids: the model's own
 * vocabulary through host/src/tokenize, with llama-perplexity's flags.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/tokenize.h"
#include "error.h"
#include "file_input.h"
#include "model_internal.h"

#define MAX_TOKENS ((size_t)1 << 28)

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int push(int32_t **v, size_t *n, size_t *cap, int32_t id, anvil_error *err) {
    if (*n == *cap) {
        if (*cap >= MAX_TOKENS) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "more than %zu token ids: split the file", MAX_TOKENS);
        }
        const size_t nc = *cap ? *cap * 2 : 1024;
        int32_t *p = realloc(*v, nc * sizeof *p);
        if (p == NULL) return anvil__nomem(err);
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = id;
    return ANVIL_OK;
}

ANVIL_API int anvil_tokens_parse(const char *text, size_t len, uint32_t n_vocab, int32_t **tokens, size_t *n,
                                 anvil_error *err) {
    anvil__error_clear(err);
    if (tokens == NULL || n == NULL || (text == NULL && len > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_tokens_parse: NULL argument");
    }
    *tokens = NULL;
    *n = 0;
    int32_t *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = ANVIL_OK;
    for (size_t i = 0; rc == ANVIL_OK && i < len;) {
        if (is_space(text[i])) {
            ++i;
            continue;
        }
        const size_t start = i;
        uint64_t id = 0;
        while (i < len && text[i] >= '0' && text[i] <= '9') {
            id = id <= INT32_MAX ? id * 10 + (uint64_t)(text[i] - '0') : id; /* saturates past INT32_MAX */
            ++i;
        }
        if (i == start || (i < len && !is_space(text[i]))) {
            const unsigned char c = (unsigned char)(i < len ? text[i] : 0);
            rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                  "byte %zu: 0x%02x is not a digit: token files hold decimal ids separated by "
                                  "whitespace",
                                  i, c);
        } else if (id > INT32_MAX || (n_vocab > 0 && id >= n_vocab)) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                  "byte %zu: token id %s%llu is outside the vocabulary (%u tokens)", start,
                                  id > INT32_MAX ? ">" : "", (unsigned long long)id, n_vocab);
        } else {
            rc = push(&v, &cnt, &cap, (int32_t)id, err);
        }
    }
    if (rc != ANVIL_OK) {
        free(v);
        return rc;
    }
    *tokens = v;
    *n = cnt;
    return ANVIL_OK;
}

ANVIL_API int anvil_tokens_read(const char *path, uint32_t n_vocab, int32_t **tokens, size_t *n, anvil_error *err) {
    char *text = NULL;
    size_t len = 0;
    int rc = file_input_read(path, (size_t)4 << 30, "a token file", &text, &len, err);
    if (rc != ANVIL_OK) return rc;
    rc = anvil_tokens_parse(text, len, n_vocab, tokens, n, err);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "%s", path);
    free(text);
    return rc;
}

ANVIL_API int anvil_model_tokenize(const anvil_model *m, const char *text, size_t len, int32_t **tokens, size_t *n,
                                   anvil_error *err) {
    *tokens = NULL;
    *n = 0;
    anvil_tokenizer *t = NULL;
    int rc = anvil_tokenizer_from_gguf(&t, m->g, err);
    if (rc != ANVIL_OK) return rc;
    const unsigned flags = ANVIL_TOKENIZE_ADD_SPECIAL; /* llama-perplexity's common_tokenize(..., true) */
    size_t count = 0;
    rc = anvil_tokenize(t, text, len, flags, NULL, 0, &count, err);
    if (rc == ANVIL_E_BUFFER_TOO_SMALL) {
        int32_t *ids = malloc((count ? count : 1) * sizeof *ids);
        if (ids == NULL) {
            rc = anvil__nomem(err);
        } else {
            anvil__error_clear(err);
            rc = anvil_tokenize(t, text, len, flags, ids, count, &count, err);
            if (rc == ANVIL_OK) {
                *tokens = ids;
                *n = count;
            } else {
                free(ids);
            }
        }
    }
    anvil_tokenizer_free(t);
    return rc;
}
