/* SPDX-License-Identifier: MIT */
/* Where tests find their data, and small CUnit conveniences. */
#ifndef ANVIL_TEST_ENV_H
#define ANVIL_TEST_ENV_H

#include <stddef.h>

#include "anvil/abi.h"

/* Path of a file under tests/ (e.g. "golden/q4_0.bin"), in a static buffer. */
const char *test_source_path(const char *rel);
/* Path of a file in ../shared/testdata, or NULL when that folder is absent. */
const char *test_shared_path(const char *name);
/* A real model file: ../shared/testdata/<name>, else the copy committed in
 * tests/data (for the few small files a suite must run without ../shared);
 * NULL when neither exists. Its own static buffer. */
const char *test_data_path(const char *name);
/* The build-tree config the suites load (ANVIL_CONFIG, else the default). */
const char *test_config_path(void);
/* A fresh temporary directory (removed by test_tmpdir_cleanup). */
const char *test_tmpdir(void);
void test_tmpdir_cleanup(void);

/* Run a shell command (printf-style), its stdout in out (cap bytes, NUL
 * terminated); returns its exit code, -1 when it could not run. */
int test_shell(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Host services as a plugin's init gets them from the host: sized, this
 * ABI version, every other field zero (the caller sets cpu etc.). */
anvil_host_services test_host_services(void);

/* Run the CUnit registry built by the caller; exit code 0 only when every
 * assertion passed and at least one ran. */
int test_run_cunit(void);

#endif
