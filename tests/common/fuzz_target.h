/* SPDX-License-Identifier: MIT */
/* libFuzzer's entry point, implemented by each fuzz_*.c target and called
 * either by libFuzzer (ANVIL_FUZZ builds) or by the replay mains that run
 * the corpus under ctest (tests/gguf/fuzz_replay.c,
 * tests/safetensors/fuzz_replay_main.c). Included by relative path: the fuzz
 * builds compile a handful of host sources with no test include path. */
#ifndef ANVIL_TEST_FUZZ_TARGET_H
#define ANVIL_TEST_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
