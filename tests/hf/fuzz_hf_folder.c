/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a Hugging Face folder's config.json and
 * model.safetensors.index.json through the folder reader and the whole
 * conversion plan (anvil_hf_convert, --dry-run, f16: nothing is written).
 * Input: the config bytes, a NUL, the index bytes (no NUL: no index). The
 * folder also holds links to the shards and tokenizer of the reference
 * llama-spm-sharded checkpoint (ANVIL_FUZZ_HF_SHARDS), so an index or a
 * config that fits them reaches the planner, the checks and the vocab.
 * Every input must give ANVIL_OK or an error with a message: never a
 * crash, a leak or a sanitizer report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fuzz_target.h"
#include "anvil/hf.h"

static char g_dir[64];

static void put(const char *name, const uint8_t *data, size_t n) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    if (f == NULL) abort();
    if (n > 0 && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
}

static void cleanup(void) {
    static const char *const names[] = { "config.json",
                                         "model.safetensors.index.json",
                                         "out.gguf",
                                         "tokenizer.model",
                                         "model-00001-of-00002.safetensors",
                                         "tokenizer_config.json",
                                         "model-00002-of-00002.safetensors" };
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
        unlink(p);
    }
    rmdir(g_dir);
}

static void setup(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/anvil-fuzz-hf-XXXXXX");
    if (mkdtemp(g_dir) == NULL) abort();
    atexit(cleanup);
#ifdef ANVIL_FUZZ_HF_SHARDS
    static const char *const links[] = { "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                         "tokenizer.model", "tokenizer_config.json" };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; ++i) {
        char from[1024], to[128];
        snprintf(from, sizeof from, "%s/%s", ANVIL_FUZZ_HF_SHARDS, links[i]);
        snprintf(to, sizeof to, "%s/%s", g_dir, links[i]);
        if (symlink(from, to) != 0) abort();
    }
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_dir[0] == '\0') setup();
    const uint8_t *nul = memchr(data, 0, size);
    const size_t cfg = nul ? (size_t)(nul - data) : size;
    put("config.json", data, cfg);
    char idx[128];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", g_dir);
    if (nul != NULL) put("model.safetensors.index.json", nul + 1, size - cfg - 1);
    else unlink(idx);
    anvil_hf_convert_options o;
    anvil_hf_convert_options_init(&o);
    o.dry_run = 1;
    o.outtype = "f16";
    char out[128];
    snprintf(out, sizeof out, "%s/out.gguf", g_dir);
    o.outfile = out;
    anvil_hf_convert_result r;
    anvil_error err = { 0 };
    if (anvil_hf_convert(NULL, g_dir, &o, &r, &err) == ANVIL_OK) anvil_hf_convert_result_free(&r);
    else if (err.message[0] == '\0') abort(); /* an error always says what */
    return 0;
}
