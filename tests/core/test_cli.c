/* The `anvil` command as a user runs it: exit codes, files, messages. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_env.h"

static char out[1 << 18];

/* Run `anvil ARGS` (stderr merged); returns the exit status. */
static int run(const char *args) {
    static char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' %s 2>&1", ANVIL_CLI, test_config_path(), args);
    FILE *p = popen(cmd, "r");
    if (p == NULL) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *tmp(const char *name) {
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", test_tmpdir(), name);
    return buf[k];
}

static void write_floats(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(x, sizeof *x, n, f), n);
    fclose(f);
}

static void test_help_everywhere(void) {
    const char *cmds[] = { "--help", "plugins --help", "codec --help", "bench --help", "demo --help" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; ++i) {
        CU_ASSERT_EQUAL(run(cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: anvil"));
    }
    CU_ASSERT_EQUAL(run("frobnicate"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown command"));
    CU_ASSERT_EQUAL(run("codec explode"), 2);
    CU_ASSERT_EQUAL(run("--version"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "plugin ABI 1.1"));
}

static void test_codec_roundtrip(void) {
    enum { N = 512 };
    float x[N];
    for (int i = 0; i < N; ++i) x[i] = sinf((float)i * 0.1f) * 3.0f;
    write_floats(tmp("in.f32"), x, N);
    char args[8192];
    snprintf(args, sizeof args, "codec encode Q8_0 '%s' '%s'", tmp("in.f32"), tmp("out.bin"));
    CU_ASSERT_EQUAL_FATAL(run(args), 0);
    FILE *f = fopen(tmp("out.bin"), "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, 0, SEEK_END);
    CU_ASSERT_EQUAL(ftell(f), (N / 32) * 34);
    fclose(f);
    snprintf(args, sizeof args, "codec decode q8_0 '%s' '%s'", tmp("out.bin"), tmp("back.f32"));
    CU_ASSERT_EQUAL_FATAL(run(args), 0);
    float y[N];
    f = fopen(tmp("back.f32"), "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(y, sizeof *y, N, f), N);
    fclose(f);
    for (int i = 0; i < N; ++i) CU_ASSERT_DOUBLE_EQUAL(y[i], x[i], 3.0 / 127.0);
}

static void test_codec_errors(void) {
    float x[40];
    for (int i = 0; i < 40; ++i) x[i] = (float)i;
    write_floats(tmp("forty.f32"), x, 40);
    char args[8192];
    snprintf(args, sizeof args, "codec encode q8_0 '%s' '%s'", tmp("forty.f32"), tmp("never.bin"));
    CU_ASSERT_EQUAL(run(args), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "whole number"));
    x[5] = INFINITY;
    write_floats(tmp("inf.f32"), x, 32);
    snprintf(args, sizeof args, "codec encode q4_0 '%s' '%s'", tmp("inf.f32"), tmp("never.bin"));
    CU_ASSERT_EQUAL(run(args), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "element 5"));
    FILE *f = fopen(tmp("never.bin"), "rb");
    CU_ASSERT_PTR_NULL(f); /* nothing written on failure */
    if (f) fclose(f);
    snprintf(args, sizeof args, "codec encode q7_7 '%s' '%s'", tmp("inf.f32"), tmp("never.bin"));
    CU_ASSERT_EQUAL(run(args), 2); /* a usage error: the command line names no type */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown type 'q7_7'"));
    snprintf(args, sizeof args, "codec decode q8_0 '%s' '%s'", tmp("nonexistent.bin"), tmp("never.f32"));
    CU_ASSERT_EQUAL(run(args), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "nonexistent.bin"));
}

static void test_codec_list_and_demo(void) {
    CU_ASSERT_EQUAL(run("codec list"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "q4_0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "encode+decode"));
    CU_ASSERT_EQUAL(run("codec list --json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "{\"schema_version\":1,\"command\":\"codec list\",\"types\":["));
    CU_ASSERT_EQUAL(run("demo"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "q8_0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "SNR"));
    CU_ASSERT_EQUAL(run("bench --type q8_0 --rows 64 --k 256 --iters 2 --no-ggml"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "GB/s"));
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("cli", NULL, NULL);
    CU_add_test(s, "--help everywhere, exit codes", test_help_everywhere);
    CU_add_test(s, "codec encode/decode round trip", test_codec_roundtrip);
    CU_add_test(s, "codec errors say what and leave no file", test_codec_errors);
    CU_add_test(s, "codec list, demo, bench", test_codec_list_and_demo);
    return test_run_cunit();
}
