/* SPDX-License-Identifier: MIT */
/*
 * A scratch checkpoint folder for the fuzz bodies of the tokenizer readers
 * (fuzz_hf_tokenizer_json.c, fuzz_hf_spm.c), which read files by name from
 * a folder: made once per process under $TMPDIR (else /dev/shm, else /tmp),
 * removed at exit.
 */
#ifndef ANVIL_TEST_FUZZ_HF_DIR_H
#define ANVIL_TEST_FUZZ_HF_DIR_H

#include <stddef.h>

/* The folder (aborts when it cannot be made). */
const char *fuzz_hf_dir(void);
/* dir/name holds data[0..n) (aborts when it cannot be written). */
void fuzz_hf_put(const char *name, const void *data, size_t n);
/* dir/name removed (absent is fine). */
void fuzz_hf_remove(const char *name);

#endif
