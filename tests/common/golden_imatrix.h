/* SPDX-License-Identifier: MIT */
/*
 * Golden fixtures of the importance-weighted encoders: ggml_quantize_chunk's
 * bytes for rows encoded with synthetic importance matrices (and a few
 * without), committed as tests/golden/imatrix/<type>.bin so the family
 * suites check the weighted paths without ggml. Written by
 *     anvil-parity --family imatrix --write-golden tests/golden
 *
 * Layout (little-endian):
 *   "ANVILIM1"
 *   golden_imx_header
 *   f32 imatrix[n_imatrix][n_per_row]
 *   n_records records:
 *     u32 input_kind              a test_input_kind
 *     u32 imatrix_index           < n_imatrix, or n_imatrix: encoded without
 *     f32 in[n_per_row]           one row
 *     u8  enc[row_bytes]          ggml's bytes, zero-padded to a multiple of 4
 */
#ifndef ANVIL_TEST_GOLDEN_IMATRIX_H
#define ANVIL_TEST_GOLDEN_IMATRIX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "anvil/abi.h"
#include "anvil/codec.h"

typedef struct golden_imx_header {
    uint32_t type_id, n_per_row, row_bytes, n_imatrix, n_records, reserved[3];
    char type_name[16];
} golden_imx_header;

typedef struct golden_imx_record {
    uint32_t kind, imatrix_index;
    const float *in;
    const float *imatrix; /* NULL: encoded without an importance matrix */
    const uint8_t *enc;
} golden_imx_record;

typedef struct golden_imx_file {
    golden_imx_header h;
    uint8_t *data; /* whole file */
    size_t size;
    size_t first_imatrix, first_rec, rec_size;
} golden_imx_file;

/* Writing (parity program --write-golden): imatrix holds n_imatrix rows. */
FILE *golden_imx_write_begin(const char *path, const golden_imx_header *h, const float *imatrix);
int golden_imx_write_record(FILE *f, const golden_imx_header *h, uint32_t kind, uint32_t imatrix_index,
                            const float *in, const void *enc);
int golden_imx_write_end(FILE *f);

/* Reading. Returns 0 or -1 (message on stderr). */
int golden_imx_load(const char *path, golden_imx_file *g);
void golden_imx_record_at(const golden_imx_file *g, size_t i, golden_imx_record *r);
void golden_imx_free(golden_imx_file *g);

/* Re-encode every record of the fixture at path with encode_rows (one row,
 * the record's importance matrix or NULL) and compare with ggml's bytes.
 * Returns the number of records that differ or fail (each named on stderr),
 * -1 when the file does not load or is for another type; *checked counts
 * the records compared. */
long golden_imx_check(const char *path, uint32_t type_id, anvil_encode_rows_fn encode_rows, size_t *checked);

/* The encode_rows contract of one codec, checked without ggml: with imatrix
 * NULL the bytes equal `encode` on the same rows (encode NULL: a format
 * ggml encodes only with an importance matrix, refused without one with
 * ANVIL_E_NEEDS_IMATRIX; its bytes with all-ones weights stand in for the
 * plain ones below); an importance matrix
 * changes the bytes of a format that uses it (uses_imatrix) and leaves them
 * alone otherwise; a row length that is not a whole number of blocks, a
 * negative or NaN weight and a NaN input are refused with the right status
 * and a message naming the row and element or the column. Returns the
 * number of failed checks (each described on stderr). */
int imatrix_contract_check(const char *name, size_t block_elems, size_t block_bytes, anvil_encode_fn encode,
                           anvil_encode_rows_fn encode_rows, int uses_imatrix);

/* Both checks for every codec of a plugin that has a row encoder: its
 * fixture <dir>/<name>.bin (dir: tests/golden/imatrix; all 32 records equal) and its
 * contract (uses_imatrix unless ANVIL_CODEC_IMATRIX_UNUSED). *n_codecs
 * counts the codecs checked. Returns the number of failures, 0 when all is
 * well (a NULL descriptor is one failure). */
int imatrix_plugin_check(const anvil_plugin_desc *d, const char *dir, size_t *n_codecs);

#endif
