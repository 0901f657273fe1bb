/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab_glue: where `anvil convert` hands the tokenizer files to the
 * tokenizer module (hf_vocab.h): read the folder's tokenizer for the
 * architecture, append its KVs where convert_hf_to_gguf.py calls set_vocab.
 * Any tokenizer problem is an error (the converter stops there too).
 */
#include "hf_vocab_glue.h"

#include "hf_vocab.h"

int hf_vocab_glue_write(const hf_folder *f, const hf_arch *a, anvil_gguf_writer *w, int *written, anvil_error *err) {
    *written = 0;
    anvil__hf_vocab *v = NULL;
    int rc = hf_vocab_load(f->dir, a->hf_name, &v, err);
    if (rc == ANVIL_OK) rc = hf_vocab_write(v, w, err);
    hf_vocab_free(v);
    if (rc == ANVIL_OK) *written = 1;
    return rc;
}
