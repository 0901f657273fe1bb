/* SPDX-License-Identifier: MIT */
/* CUnit driver for the transcode / merge-lora suites. */
#include <CUnit/CUnit.h>

#include "tc_test.h"
#include "test_env.h"

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    tc_add_policy_tests();
    tc_add_stream_tests();
    tc_add_lora_tests();
    tc_add_float_rows_tests();
    const int rc = test_run_cunit();
    tc_ctx_release();
    return rc;
}
