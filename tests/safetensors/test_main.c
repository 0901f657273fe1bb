/* SPDX-License-Identifier: MIT */
/* CUnit driver for the safetensors container suites. */
#include <CUnit/CUnit.h>
#include <stdio.h>

#include "st_test.h"
#include "test_env.h"

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 2;
    }
    st_add_reader_tests();
    st_add_hostile_tests();
    st_add_writer_tests();
    st_add_stream_tests();
    st_add_save_tests();
    return test_run_cunit();
}
