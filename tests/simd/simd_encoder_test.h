/* SPDX-License-Identifier: MIT */
/* The weight-encoder part of the SIMD backend suite (simd_backend_test.c):
 * every encoder a backend offers against the codec's reference encoder
 * (plugins/ref), byte for byte. */
#ifndef ANVIL_SIMD_ENCODER_TEST_H
#define ANVIL_SIMD_ENCODER_TEST_H

#include <CUnit/Basic.h>
#include <stddef.h>

#include "anvil/backend.h"

/* *backend is read when the tests run (the suite re-initialises the plugin
 * per variant); variant is the encoders' variant string; required lists
 * the formats that must have an encoder ("" for every format listed). */
void sb_encoder_setup(const anvil_backend *const *backend, const char *variant, const char *required, size_t rows);
void sb_add_encoder_tests(CU_pSuite s);

#endif
