/* SPDX-License-Identifier: MIT */
/*
 * Two GGUF files compared as the `anvil convert` tests need: every KV in
 * order (key, wire type, raw bytes) and every tensor (name, type, dims,
 * bytes); KVs whose key starts with skip_prefix (may be NULL) left out on
 * both sides. 0 when equal, 1 with the first difference in why, -1 when a
 * file cannot be read (why says so).
 */
#ifndef ANVIL_TESTS_GGUF_SAME_H
#define ANVIL_TESTS_GGUF_SAME_H

#include <stddef.h>

int gguf_same(const char *a, const char *b, const char *skip_prefix, char *why, size_t why_size);

#endif
