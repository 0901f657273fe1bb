/* SPDX-License-Identifier: MIT */
/*
 * tc_synth_model OUT.gguf [small|demo|bench|big] [f32|f16|bf16]
 * tc_synth_model --size [small|demo|bench|big]
 *
 * Writes (or sizes) a deterministic llama-shaped model through
 * synth_model_write, for the CLI and big transcode tests.
 *   small  vocab 512, n_embd 256, n_ff 512, 2 layers (~1 MB in F16)
 *   demo   vocab 4096, n_embd 512, n_ff 1536, 4 layers (~34 MB)
 *   bench  vocab 32000, n_embd 1024, n_ff 2816, 8 layers, GQA 4 (~250 MB: quantize timings)
 *   big    vocab 32000, n_embd 2048, n_ff 5632, 19 layers: > 2 GiB in F16
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "anvil/transcode.h"
#include "synth_model.h"

static int preset(const char *name, synth_model *m) {
    memset(m, 0, sizeof *m);
    m->type = ANVIL_TYPE_F16;
    m->seed = 1234;
    if (strcmp(name, "small") == 0) {
        *m = (synth_model){ 512, 256, 512, 2, 4, 2, ANVIL_TYPE_F16, 1234, NULL, NULL, 0, 0, 0 };
    } else if (strcmp(name, "demo") == 0) {
        *m = (synth_model){ 4096, 512, 1536, 4, 8, 4, ANVIL_TYPE_F16, 1234, NULL, NULL, 0, 0, 0 };
    } else if (strcmp(name, "bench") == 0) {
        *m = (synth_model){ 32000, 1024, 2816, 8, 16, 4, ANVIL_TYPE_F16, 1234, "anvil bench llama", NULL, 0, 0, 0 };
    } else if (strcmp(name, "big") == 0) {
        *m = (synth_model){ 32000, 2048, 5632, 19, 16, 16, ANVIL_TYPE_F16, 1234, "anvil big synthetic llama",
                            NULL,  0,    0,    0 };
    } else {
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    synth_model m;
    anvil_error err;
    if (argc >= 2 && strcmp(argv[1], "--size") == 0) {
        uint64_t bytes = 0;
        if (preset(argc > 2 ? argv[2] : "small", &m) != 0 || synth_model_size(&m, &bytes, &err) != ANVIL_OK) {
            fprintf(stderr, "tc_synth_model: bad preset\n");
            return 2;
        }
        printf("%" PRIu64 "\n", bytes);
        return 0;
    }
    if (argc < 2 || preset(argc > 2 ? argv[2] : "small", &m) != 0) {
        fprintf(stderr, "usage: tc_synth_model OUT.gguf [small|demo|bench|big] [f32|f16|bf16]\n");
        return 2;
    }
    if (argc > 3) {
        m.type = strcmp(argv[3], "f32") == 0    ? ANVIL_TYPE_F32
                 : strcmp(argv[3], "bf16") == 0 ? ANVIL_TYPE_BF16
                                                : ANVIL_TYPE_F16;
    }
    if (synth_model_write(argv[1], &m, NULL, &err) != ANVIL_OK) {
        fprintf(stderr, "tc_synth_model: %s\n", err.message);
        return 1;
    }
    return 0;
}
