/* SPDX-License-Identifier: MIT */
/* CUnit driver for the GGUF container suites. */
#include <CUnit/CUnit.h>

#include "gguf_test.h"
#include "test_env.h"

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 2;
    }
    gguf_add_reader_tests();
    gguf_add_writer_tests();
    gguf_add_hostile_tests();
    gguf_add_split_tests();
    gguf_add_lenient_tests();
    return test_run_cunit();
}
