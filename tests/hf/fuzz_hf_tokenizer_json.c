/* SPDX-License-Identifier: MIT */
/*
 * Fuzz body for the tokenizer.json reader (host/src/hf/hf_vocab*.c through
 * hf_vocab_load): byte 0 picks the architecture (Llama or Qwen2: the
 * LlamaHfVocab and gpt2 paths), config.json's vocab_size (none, 320 or
 * 4) and whether a tokenizer_config.json (special tokens, a chat template
 * list) is there; the rest is tokenizer.json. Every load succeeds or is
 * refused with a message naming a file of the folder; never a crash, a
 * leak or a hang. libFuzzer target with ANVIL_FUZZ; replayed over
 * corpus_hf_tokenizer_json/ always (fuzz_hf_tokenizer_json_replay).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_vocab.h"

#include "../common/fuzz_target.h"
#include "fuzz_hf_dir.h"

static const char k_tcfg[] =
    "{\"bos_token\": \"<|begin_of_text|>\", \"eos_token\": {\"content\": \"<|im_end|>\"}, \"add_bos_token\": true, "
    "\"chat_template\": [{\"name\": \"default\", \"template\": \"{{x}}\"}, {\"name\": \"tool use\", \"template\": "
    "\"{{y}}\"}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > 1 << 20) return 0;
    const int llama = data[0] & 1, vs = (data[0] >> 1) & 3, tcfg = (data[0] >> 3) & 1;
    const char *arch = llama ? "LlamaForCausalLM" : "Qwen2ForCausalLM";
    char cfg[256];
    snprintf(cfg, sizeof cfg, "{\"architectures\": [\"%s\"]%s, \"bos_token_id\": 1}", arch,
             vs == 1   ? ", \"vocab_size\": 320"
             : vs == 2 ? ", \"vocab_size\": 4"
                       : "");
    fuzz_hf_put("config.json", cfg, strlen(cfg));
    if (tcfg) fuzz_hf_put("tokenizer_config.json", k_tcfg, sizeof k_tcfg - 1);
    else fuzz_hf_remove("tokenizer_config.json");
    fuzz_hf_put("tokenizer.json", data + 1, size - 1);
    anvil__hf_vocab *v = NULL;
    anvil_error err;
    const int rc = hf_vocab_load(fuzz_hf_dir(), arch, &v, &err);
    if (rc == ANVIL_OK) {
        if (v == NULL || hf_vocab_kind(v) == NULL || hf_vocab_pre(v) == NULL) abort();
    } else if (v != NULL || (strstr(err.message, fuzz_hf_dir()) == NULL && rc != ANVIL_E_NOMEM)) {
        abort(); /* every refusal names the file */
    }
    if (getenv("FUZZ_HF_SHOW") != NULL) fprintf(stderr, "rc %d %s\n", rc, rc ? err.message : hf_vocab_kind(v));
    hf_vocab_free(v);
    return 0;
}
