# backend-avx2 against the scalar reference (plugins/ref): every kernel on
# >= 10,000 random rows per format, the activation quantizers byte for byte,
# the row decoders bit for bit, GEMV/GEMM against vec_dot, and the
# ANVIL_CPU_MASK=-avx2 fallback through the CLI and anvil_matmul. The test
# source is shared with test_avx512 (CMakeLists.txt, this folder).
# x86-64 only; on a CPU without AVX2/FMA/F16C the kernel checks are skipped
# (and say so); the score and CLI checks still run. SB_OPTIONAL: formats
# without an AVX2 kernel yet, dispatched to the scalar referee (none now).
anvil_add_cunit_test(test_avx2 SOURCES simd_backend_test.c simd_encoder_test.c
                     LIBS anvil anvil_ref anvil_ptqtp_ref LABELS avx2)
target_compile_definitions(test_avx2 PRIVATE
  SB_KIND=1 SB_PLUGIN_ID="backend-avx2" SB_BACKEND="avx2" SB_REQUIRED="" SB_OPTIONAL=""
  SB_VARIANT_PLAIN="avx2" SB_VARIANT_VNNI="avx2" SB_ENC_VARIANT="avx2" SB_ROWS_ENV="ANVIL_AVX2_TEST_ROWS"
  SB_PLUGIN_PATH="${ANVIL_PLUGIN_OUTPUT_DIR}/backend-avx2.so"
  ANVIL_PLUGIN_DIR="${ANVIL_PLUGIN_OUTPUT_DIR}"
  ANVIL_CLI="$<TARGET_FILE:anvil_cli>")
set_tests_properties(test_avx2 PROPERTIES COST 105)
add_dependencies(test_avx2 backend-avx2 backend-scalar codec-q8_0 codec-kquants codec-ternary codec-cold codec-ptqtp anvil_cli)
