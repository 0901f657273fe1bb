/* SPDX-License-Identifier: MIT */
/*
 * Golden fixtures: ggml's outputs on fixed inputs, committed under
 * tests/golden/ so the core suites check parity without ggml present.
 *
 * File layout (little-endian), one file per type:
 *   "ANVILGD1"
 *   u32 type_id, act_type, row_len, n_rows, row_bytes, act_row_bytes, flags, reserved
 *   char type_name[16]
 *   f32 act[row_len]              one activation row shared by all records
 *   u8  act_q[act_row_bytes]      ggml's quantization of act (act_type), zero-padded to 4
 *   n_rows records:
 *     u32 kind, u32 rec_flags     kind = test_input_kind; bit0: enc = ggml encode(in)
 *     f32 in[row_len]             (zeros when the record is decode-only)
 *     u8  enc[row_bytes]          block bytes, zero-padded to a multiple of 4
 *     f32 dec[row_len]            ggml dequantize(enc)
 *     f32 dot                     ggml vec_dot(enc, act_q) (NaN when none)
 */
#ifndef ANVIL_TEST_GOLDEN_H
#define ANVIL_TEST_GOLDEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GOLDEN_REC_ENCODED 1u

typedef struct golden_header {
    uint32_t type_id, act_type, row_len, n_rows, row_bytes, act_row_bytes, flags, reserved;
    char type_name[16];
} golden_header;

typedef struct golden_record {
    uint32_t kind, flags;
    const float *in;
    const uint8_t *enc;
    const float *dec;
    float dot;
} golden_record;

typedef struct golden_file {
    golden_header h;
    const float *act;
    const uint8_t *act_q;
    uint8_t *data; /* whole file */
    size_t size;
    size_t rec_size;
    size_t first_rec;
} golden_file;

/* Writing (parity program --write-golden). */
FILE *golden_write_begin(const char *path, const golden_header *h, const float *act, const void *act_q);
int golden_write_record(FILE *f, const golden_header *h, uint32_t kind, uint32_t rec_flags, const float *in,
                        const void *enc, const float *dec, float dot);
int golden_write_end(FILE *f);

/* Reading. Returns 0 or -1 (message on stderr). golden_read_file reads a
 * whole fixture of at least min_size bytes into a malloc'd buffer. */
int golden_read_file(const char *path, size_t min_size, uint8_t **data, size_t *size);
int golden_load(const char *path, golden_file *g);
void golden_record_at(const golden_file *g, size_t i, golden_record *r);
void golden_free(golden_file *g);

#endif
