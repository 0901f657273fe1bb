/* SPDX-License-Identifier: MIT */
/* The one whole-file reader of the test programs (suites, parity, fuzz
 * replays): no CUnit, so anything may link it. */
#ifndef ANVIL_TEST_READ_FILE_H
#define ANVIL_TEST_READ_FILE_H

#include <stddef.h>

/* The bytes of path in a malloc'd buffer with a NUL after them (so text
 * files read as strings), their count in *size; NULL when the file cannot be
 * opened or read. */
void *test_read_file(const char *path, size_t *size);

#endif
