/* SPDX-License-Identifier: MIT */
/*
 * Fuzz body for anvil_tokenize: any bytes, any flags, on an SPM vocabulary
 * (tests/data's llama SPM) and, when ../shared/testdata has them, the Llama 3
 * and Qwen2 BPE ones. Byte 0 picks the vocabulary and the flags; the rest is
 * the text. Every call returns ANVIL_OK with ids inside the vocabulary, the
 * count-only call gives the same count, or (BPE only) ANVIL_E_FORMAT for a
 * code point above U+10FFFF; never a crash, a leak or an out-of-range id.
 * libFuzzer target with ANVIL_FUZZ; replayed over corpus_tokenize/ always.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/tokenize.h"

#include "../common/fuzz_target.h"

static anvil_tokenizer *toks[3];
static int opened;

static void open_all(void) {
    static const char *const paths[3] = {
        ANVIL_TEST_SOURCE_DIR "/data/ggml-vocab-llama-spm.gguf",
        ANVIL_SHARED_TESTDATA "/hf/llama3-bpe.f16.gguf",
        ANVIL_SHARED_TESTDATA "/hf/qwen2-bpe.bf16.gguf",
    };
    for (int i = 0; i < 3; ++i) {
        anvil_error err;
        if (anvil_tokenizer_open(&toks[i], paths[i], &err) != ANVIL_OK) toks[i] = NULL;
    }
    if (toks[0] == NULL) abort(); /* the committed vocabulary must open */
    opened = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!opened) open_all();
    if (size == 0 || size > 1 << 16) return 0;
    anvil_tokenizer *t = toks[(data[0] >> 2) % 3];
    if (t == NULL) t = toks[0];
    const unsigned flags = data[0] & 3u;
    const char *text = (const char *)data + 1;
    const size_t len = size - 1;
    anvil_tokenizer_info info = { .size = sizeof info };
    anvil_tokenizer_info_get(t, &info);
    size_t n = 0, n2 = 0;
    anvil_error err;
    const int rc = anvil_tokenize(t, text, len, flags, NULL, 0, &n, &err);
    if (rc == ANVIL_E_FORMAT && info.kind == ANVIL_VOCAB_BPE && strstr(err.message, "U+10FFFF")) return 0;
    if (rc != ANVIL_OK && rc != ANVIL_E_BUFFER_TOO_SMALL) abort();
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (ids == NULL) return 0;
    if (anvil_tokenize(t, text, len, flags, ids, n, &n2, &err) != ANVIL_OK || n2 != n) abort();
    for (size_t i = 0; i < n; ++i)
        if (ids[i] < 0 || (uint32_t)ids[i] >= info.n_tokens) abort();
    free(ids);
    return 0;
}
