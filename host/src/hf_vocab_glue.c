/*
 * hf_vocab_glue: where `anvil convert` hands the tokenizer files to the
 * tokenizer module. Until that module is linked, no tokenizer KV is written
 * and *written is 0 (the CLI says so: llama.cpp cannot load such a file).
 */
#include "hf_vocab_glue.h"

int hf_vocab_glue_write(const hf_folder *f, const hf_arch *a, anvil_gguf_writer *w, int *written,
                        anvil_error *err) {
    (void)f, (void)a, (void)w, (void)err;
    *written = 0;
    return ANVIL_OK;
}
