/* SPDX-License-Identifier: MIT */
/* What `anvil inspect` prints the same way for GGUF and safetensors: the
 * totals by type, sizes for people, and markdown-safe text. */
#ifndef ANVIL_CLI_INSPECT_COMMON_H
#define ANVIL_CLI_INSPECT_COMMON_H

#include <stdint.h>
#include <stdio.h>

#define INSPECT_MAX_TYPES 64

typedef struct inspect_count {
    const char *type; /* points at a name that outlives the totals */
    uint64_t tensors, elements, bytes;
} inspect_count;

typedef struct inspect_totals {
    inspect_count all;
    inspect_count by_type[INSPECT_MAX_TYPES];
    size_t n_types;
    uint64_t skipped; /* tensors with a problem, not counted */
} inspect_totals;

void inspect_totals_add(inspect_totals *t, const char *type, uint64_t elements, uint64_t bytes);
double inspect_bits_per_weight(const inspect_count *c);

/* "1.19 MB": decimal units, as file sizes are usually quoted. */
const char *inspect_human(uint64_t bytes, char *buf, size_t size);

/* JSON: ,"totals":{...} */
void inspect_json_totals(FILE *f, const inspect_totals *t);
/* Text: the totals line and one line per type. */
void inspect_text_totals(FILE *f, const inspect_totals *t, int markdown);

/* Text for a markdown table cell: terminal-safe (cli_text_bytes), with '|'
 * and '`' escaped. */
void inspect_md_cell(FILE *f, const char *p, size_t len);

#endif
