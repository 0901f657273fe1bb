/* SPDX-License-Identifier: MIT */
/* CUnit driver for test_base: the config, json and ecma regex suites. */
#include <CUnit/CUnit.h>

#include "base_test.h"
#include "test_env.h"

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 2;
    }
    base_add_config_tests();
    base_add_json_tests();
    base_add_ecma_tests();
    return test_run_cunit();
}
