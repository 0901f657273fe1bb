/* SPDX-License-Identifier: MIT */
/* Shared helpers for the safetensors suites. */
#ifndef ANVIL_TEST_ST_TEST_H
#define ANVIL_TEST_ST_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/safetensors.h"

/* An image: 8-byte length = strlen(header), the header, then data. */
unsigned char *st_image(const char *header, const void *data, size_t data_len, size_t *size);
/* Same with an explicit length field and raw header bytes. */
unsigned char *st_image_raw(uint64_t length_field, const void *header, size_t header_len, const void *data,
                            size_t data_len, size_t *size);

/* Parse (borrowing) and return the status; the message goes to *err. On
 * failure also checks that nothing was handed out. */
int st_parse_status(const void *image, size_t size, anvil_error *err);
/* st_image + st_parse_status; `err` may be NULL. */
int st_header_status(const char *header, const void *data, size_t data_len, anvil_error *err);

/* Whole file into malloc'd memory, or NULL. */
unsigned char *st_read_file(const char *path, size_t *size);
/* tests/data/<name> if copied there, else ../shared/testdata/<name>, else
 * NULL (the caller skips, printing a note). */
const char *st_data_path(const char *name);

/* Suites. */
void st_add_reader_tests(void);
void st_add_hostile_tests(void);
void st_add_writer_tests(void);
void st_add_stream_tests(void);
void st_add_save_tests(void);

#endif
