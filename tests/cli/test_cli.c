/* SPDX-License-Identifier: MIT */
/* The `anvil` command as a user runs it: exit codes, files, messages. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "golden_imatrix.h"
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

static size_t file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return 0;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return n > 0 ? (size_t)n : 0;
}

/* `codec encode --imatrix` gives ggml_quantize_chunk's bytes: two rows of
 * the committed q4_K imatrix golden (ggml's output) that share one matrix,
 * encoded as one file of two rows. */
static void test_codec_imatrix(void) {
    golden_imx_file g;
    CU_ASSERT_EQUAL_FATAL(golden_imx_load(test_source_path("golden/imatrix/q4_K.bin"), &g), 0);
    golden_imx_record a, b;
    size_t i = 0, j;
    do {
        golden_imx_record_at(&g, i++, &a);
    } while (a.imatrix == NULL && i < g.h.n_records);
    for (j = i; j < g.h.n_records; ++j) {
        golden_imx_record_at(&g, j, &b);
        if (b.imatrix_index == a.imatrix_index) break;
    }
    CU_ASSERT_FATAL(a.imatrix != NULL && j < g.h.n_records);
    const size_t npr = g.h.n_per_row, rb = g.h.row_bytes;
    float *in = malloc(2 * npr * sizeof *in);
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    memcpy(in, a.in, npr * sizeof *in);
    memcpy(in + npr, b.in, npr * sizeof *in);
    write_floats(tmp("rows.f32"), in, 2 * npr);
    write_floats(tmp("w.f32"), a.imatrix, npr);
    char args[8192];
    snprintf(args, sizeof args, "codec encode q4_K '%s' '%s' --imatrix '%s'", tmp("rows.f32"), tmp("w.bin"),
             tmp("w.f32"));
    CU_ASSERT_EQUAL(run(args), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 rows of 512"));
    uint8_t *enc = malloc(2 * rb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
    FILE *f = fopen(tmp("w.bin"), "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(enc, 1, 2 * rb, f), 2 * rb);
    fclose(f);
    CU_ASSERT(memcmp(enc, a.enc, rb) == 0);
    CU_ASSERT(memcmp(enc + rb, b.enc, rb) == 0);
    /* Without the matrix the bytes are the plain encoder's, not these. */
    snprintf(args, sizeof args, "codec encode q4_K '%s' '%s'", tmp("rows.f32"), tmp("plain.bin"));
    CU_ASSERT_EQUAL(run(args), 0);
    f = fopen(tmp("plain.bin"), "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(enc, 1, 2 * rb, f), 2 * rb);
    fclose(f);
    CU_ASSERT(memcmp(enc, a.enc, rb) != 0);
    /* A format that ignores the matrix says so. */
    snprintf(args, sizeof args, "codec encode tq2_0 --imatrix '%s' '%s' '%s'", tmp("w.f32"), tmp("rows.f32"),
             tmp("t.bin"));
    CU_ASSERT_EQUAL(run(args), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ignores it"));
    free(enc);
    free(in);
    golden_imx_free(&g);
}

/* Bad importance matrices: each refused with what is wrong, no file left. */
static void test_codec_imatrix_errors(void) {
    float x[1024], w[768];
    for (int i = 0; i < 1024; ++i) x[i] = sinf((float)i);
    for (int i = 0; i < 768; ++i) w[i] = 1.0f;
    write_floats(tmp("x.f32"), x, 1024);
    write_floats(tmp("w100.f32"), w, 100);
    write_floats(tmp("w768.f32"), w, 768);
    write_floats(tmp("w0.f32"), w, 0);
    write_floats(tmp("w32.f32"), w, 32);
    w[7] = -2.0f;
    write_floats(tmp("wneg.f32"), w, 512);
    w[7] = NAN;
    write_floats(tmp("wnan.f32"), w, 512);
    FILE *f = fopen(tmp("w3.f32"), "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("abc", f);
    fclose(f);
    static const struct {
        const char *type, *file, *expect;
    } cases[] = {
        { "q4_K", "w100.f32", "100 weights (one per column) are not a whole number of 256-element q4_K blocks" },
        { "q4_K", "w768.f32", "do not split the 1024 input values into whole rows" },
        { "q4_K", "w0.f32", "is empty" },
        { "q4_0", "wneg.f32", "column 7 is -2" },
        { "q5_K", "wnan.f32", "column 7 is nan" },
        { "q4_K", "w3.f32", "3 bytes is not a whole number of float32 weights" },
        { "q4_K", "absent.f32", "absent.f32" },
        { "q8_1", "w32.f32", "no importance-weighted encoder" },
    };
    char args[8192];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        snprintf(args, sizeof args, "codec encode %s '%s' '%s' --imatrix '%s'", cases[i].type, tmp("x.f32"),
                 tmp("never.bin"), tmp(cases[i].file));
        CU_ASSERT_EQUAL(run(args), 1);
        if (strstr(out, cases[i].expect) == NULL) {
            fprintf(stderr, "\n  %s: expected '%s' in: %s\n", cases[i].file, cases[i].expect, out);
            CU_FAIL("message does not say what is wrong");
        }
        CU_ASSERT_EQUAL(file_size(tmp("never.bin")), 0);
    }
    snprintf(args, sizeof args, "codec encode q4_K '%s' '%s' --imatrix", tmp("x.f32"), tmp("never.bin"));
    CU_ASSERT_EQUAL(run(args), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--imatrix takes one FILE"));
    /* codec list tells which formats use, ignore or refuse a matrix. */
    CU_ASSERT_EQUAL(run("codec list"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "imatrix"));
    CU_ASSERT_EQUAL(run("codec list --json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"type\":\"q4_K\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"status\":\"encode+decode\",\"act\":\"q8_K\",\"imatrix\":\"uses\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"type\":\"q8_0\",\"id\":8,\"block_elems\":32,\"block_bytes\":34,"
                                       "\"bits_per_weight\":8.5000,\"status\":\"encode+decode\",\"act\":\"q8_0\","
                                       "\"imatrix\":\"ignored\""));
}

/* IQ2_XXS IQ2_XS IQ1_S encode only with an importance matrix: without
 * --imatrix a usage error (2) naming the option, no file; with one they
 * encode; `codec list` shows them encodable, needing the matrix. */
static void test_codec_needs_imatrix(void) {
    float x[512], w[256];
    for (int i = 0; i < 512; ++i) x[i] = sinf((float)i * 0.3f);
    for (int i = 0; i < 256; ++i) w[i] = 1.0f + (float)(i % 3);
    write_floats(tmp("nx.f32"), x, 512);
    write_floats(tmp("nw.f32"), w, 256);
    static const char *const types[] = { "iq2_xxs", "IQ2_XS", "iq1_s" };
    char args[8192];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
        snprintf(args, sizeof args, "codec encode %s '%s' '%s'", types[i], tmp("nx.f32"), tmp("never.bin"));
        CU_ASSERT_EQUAL(run(args), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "needs an importance matrix"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "pass --imatrix FILE"));
        CU_ASSERT_EQUAL(file_size(tmp("never.bin")), 0);
        snprintf(args, sizeof args, "codec encode %s '%s' '%s' --imatrix '%s'", types[i], tmp("nx.f32"), tmp("n.bin"),
                 tmp("nw.f32"));
        CU_ASSERT_EQUAL(run(args), 0);
        CU_ASSERT(file_size(tmp("n.bin")) > 0);
    }
    CU_ASSERT_EQUAL(run("codec list --json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"type\":\"iq2_xxs\",\"id\":16,\"block_elems\":256,\"block_bytes\":66,"
                                       "\"bits_per_weight\":2.0625,\"status\":\"encode+decode\",\"act\":\"q8_K\","
                                       "\"imatrix\":\"needs\""));
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("cli", NULL, NULL);
    CU_add_test(s, "--help everywhere, exit codes", test_help_everywhere);
    CU_add_test(s, "codec encode/decode round trip", test_codec_roundtrip);
    CU_add_test(s, "codec errors say what and leave no file", test_codec_errors);
    CU_add_test(s, "codec list, demo, bench", test_codec_list_and_demo);
    CU_add_test(s, "codec encode --imatrix: ggml's bytes", test_codec_imatrix);
    CU_add_test(s, "codec encode --imatrix: bad matrices refused", test_codec_imatrix_errors);
    CU_add_test(s, "codec encode without a needed --imatrix: usage error", test_codec_needs_imatrix);
    return test_run_cunit();
}
