/* SPDX-License-Identifier: MIT */
/*
 * The SDK from the outside: install anvil into a temporary prefix, build the
 * out-of-tree example codec (sdk/examples/codec-mxfp8) against the installed
 * package only, load it through a config, and use it the ways a user would:
 * `anvil plugins`, `anvil codec list/encode/decode`, matmul through the
 * host's fallback path (the codec's reference dot).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "test_env.h"

static char prefix[4096], example[4096], config[4096], anvil_cli[4200];
static char out[1 << 16];

/* A command's exit code (its output in `out`, shown when it fails). */
#define sh(...) sh_report(test_shell(out, sizeof out, __VA_ARGS__))
static int sh_report(int rc) {
    if (rc != 0) fprintf(stderr, "\n%s\n(exit %d)\n", out, rc);
    return rc;
}

/* Install, build the example out of tree, write its config. */
static int setup(void) {
    const char *tmp = test_tmpdir();
    snprintf(prefix, sizeof prefix, "%s/prefix", tmp);
    snprintf(example, sizeof example, "%s/example", tmp);
    snprintf(config, sizeof config, "%s/my.ini", tmp);
    snprintf(anvil_cli, sizeof anvil_cli, "%s/bin/anvil", prefix);
    if (sh("cmake --install '%s' --prefix '%s' 2>&1", ANVIL_TEST_BUILD_DIR, prefix) != 0) return 1;
    /* Only the installed package: no source tree include paths. */
    if (sh("cmake -S '%s/sdk/examples/codec-mxfp8' -B '%s' -DCMAKE_PREFIX_PATH='%s' -DCMAKE_BUILD_TYPE=Release 2>&1 && "
           "cmake --build '%s' 2>&1 && mkdir -p '%s/plugins' && cp '%s/codec-mxfp8.so' '%s/plugins/' && "
           "chmod 0755 '%s/plugins' && chmod 0644 '%s/plugins/codec-mxfp8.so'",
           ANVIL_SOURCE_ROOT, example, prefix, example, tmp, example, tmp, tmp, tmp) != 0) {
        return 1;
    }
    FILE *f = fopen(config, "w");
    if (f == NULL) return 1;
    fprintf(f, "[plugins]\npath = %s/lib/anvil/plugins:%s/plugins\nload = codec-q8_0, backend-scalar, codec-mxfp8\n",
            prefix, tmp);
    fclose(f);
    /* Plugins and configs load only when their owner alone can change them:
     * independent of the umask the tests run under. */
    return sh("chmod 0644 '%s' && chmod -R go-w '%s'", config, prefix) != 0;
}

static void test_installed_layout(void) {
    /* the installed CLI runs from its prefix with the installed default config */
    CU_ASSERT_EQUAL(sh("env -u ANVIL_CONFIG '%s' plugins 2>&1", anvil_cli), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, prefix));
    CU_ASSERT_EQUAL(sh("PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags anvil-sdk", prefix), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/include"));
    CU_ASSERT_EQUAL(sh("test -L '%s/lib/libanvil.so.0' && test -f '%s/include/anvil/abi.h'", prefix, prefix), 0);
}

/* A profile from the install, its plugin path relative to the install
 * (@prefix), not to where the file came from. */
static void test_installed_profile(void) {
    CU_ASSERT_EQUAL(sh("'%s' --config '%s/etc/anvil/profiles/minimal-q8_0.ini' plugins 2>&1", anvil_cli, prefix), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "codec-q8_0"));
    char want[4200];
    snprintf(want, sizeof want, "%s/lib/anvil/plugins/codec-q8_0.so", prefix);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
}

static void test_plugin_loads(void) {
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' plugins 2>&1", anvil_cli, config), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "codec-mxfp8"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "mxfp8"));
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' codec list 2>&1", anvil_cli, config), 0);
    const char *line = strstr(out, "mxfp8");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "1100"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "8.2500"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "encode+decode"));
}

/* E4M3 values the spec pins: with the block's largest magnitude 448 the
 * shared scale is 2^0 (E8M0 127) and the elements are exact. */
static void test_codec_roundtrip_cli(void) {
    enum { N = 64 };
    float x[N];
    x[0] = 448.0f;    /* S.1111.110 */
    x[1] = 1.0f;      /* S.0111.000 */
    x[2] = -0.5f;     /* 1.0110.000 */
    x[3] = 0x1.0p-9f; /* smallest subnormal */
    x[4] = 0.0f;
    x[5] = 240.0f; /* 1.875 * 2^7 */
    for (int i = 6; i < 32; ++i) x[i] = (float)(i - 16) * 0.25f;
    for (int i = 32; i < N; ++i) x[i] = sinf((float)i) * 1000.0f; /* second block: scale 2^1 */
    char in[4200], enc[4200], dec[4200];
    snprintf(in, sizeof in, "%s/x.f32", test_tmpdir());
    snprintf(enc, sizeof enc, "%s/x.mxfp8", test_tmpdir());
    snprintf(dec, sizeof dec, "%s/back.f32", test_tmpdir());
    FILE *f = fopen(in, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(x, sizeof *x, N, f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(sh("'%s' --config '%s' codec encode MXFP8 '%s' '%s' 2>&1", anvil_cli, config, in, enc), 0);
    unsigned char b[66];
    f = fopen(enc, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(b, 1, sizeof b + 1, f), 66); /* 2 blocks of 33 bytes */
    fclose(f);
    CU_ASSERT_EQUAL(b[0], 127);      /* 2^0 */
    CU_ASSERT_EQUAL(b[1], 0x7E);     /* 448 */
    CU_ASSERT_EQUAL(b[2], 0x38);     /* 1.0 */
    CU_ASSERT_EQUAL(b[3], 0xB0);     /* -0.5 */
    CU_ASSERT_EQUAL(b[4], 0x01);     /* 2^-9 */
    CU_ASSERT_EQUAL(b[5], 0x00);     /* 0 */
    CU_ASSERT_EQUAL(b[6], 0x77);     /* 240 */
    CU_ASSERT_EQUAL(b[33], 127 + 1); /* max |x| in [512, 1024): 2^(9 - 8) */
    CU_ASSERT_EQUAL_FATAL(sh("'%s' --config '%s' codec decode mxfp8 '%s' '%s' 2>&1", anvil_cli, config, enc, dec), 0);
    float y[N];
    f = fopen(dec, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(y, sizeof *y, N, f), N);
    fclose(f);
    for (int i = 0; i < 32; ++i) CU_ASSERT_EQUAL(y[i], x[i]); /* all exact in E4M3 at scale 1 */
    for (int i = 32; i < N; ++i) {
        /* The scale puts the largest magnitude in [256, 512) x 2^1, so
         * elements beyond 448 x 2 saturate (the spec's clamping); the rest
         * keep 3 mantissa bits: relative error <= 2^-4. */
        const float expect = fmaxf(-896.0f, fminf(896.0f, x[i]));
        CU_ASSERT_TRUE(fabsf(y[i] - expect) <= fabsf(expect) / 16.0f + 0x1.0p-8f);
    }
    CU_ASSERT_EQUAL(fabsf(y[32 + 1]) <= 896.0f, 1);
    /* NaN is refused with the element index, and nothing is written */
    x[7] = NAN;
    f = fopen(in, "wb");
    fwrite(x, sizeof *x, N, f);
    fclose(f);
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' codec encode mxfp8 '%s' '%s.never' 2>&1", anvil_cli, config, in, enc), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "element 7"));
}

static void test_matmul_fallback(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, config, &err), ANVIL_OK);
    enum { K = 128, R = 9 };
    float w[R * K], x[K], y[R], dec[R * K];
    unsigned char blocks[R * (K / 32) * 33];
    for (int i = 0; i < R * K; ++i) w[i] = cosf((float)i * 0.31f) * (1.0f + (float)(i % 7));
    for (int i = 0; i < K; ++i) x[i] = sinf((float)i * 0.17f);
    CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, 1100, w, R * K, blocks, sizeof blocks, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_decode(ctx, 1100, blocks, sizeof blocks, dec, R * K, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, 1100, blocks, R, K, x, 1, y, &err), ANVIL_OK);
    for (int r = 0; r < R; ++r) {
        double ref = 0, mag = 0;
        for (int i = 0; i < K; ++i) {
            ref += (double)dec[r * K + i] * x[i];
            mag += fabs((double)dec[r * K + i] * x[i]);
        }
        CU_ASSERT_DOUBLE_EQUAL(y[r], ref, 1e-5 * mag + 1e-12);
    }
    int fallback_seen = 0;
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_dispatch_report d;
        anvil_ctx_dispatch_report(ctx, i, &d);
        if (d.weight_type == 1100) fallback_seen = d.fallback && strstr(d.note, "reference dot") != NULL;
    }
    CU_ASSERT_TRUE(fallback_seen);
    anvil_ctx_close(ctx);
}

/* A GGUF file holding a tensor of the new type: written, inspected (the type
 * shown by the plugin's name), read back and decoded; without the plugin the
 * file is refused as "plugin missing", never as corrupt. */
static void test_gguf_with_new_type(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, config, &err), ANVIL_OK);
    enum { K = 64, R = 4 };
    float w[R * K], back[R * K], dec[R * K];
    unsigned char blocks[R * (K / 32) * 33];
    for (int i = 0; i < R * K; ++i) w[i] = sinf((float)i * 0.13f) * 10.0f;
    CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, 1100, w, R * K, blocks, sizeof blocks, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_decode(ctx, 1100, blocks, sizeof blocks, dec, R * K, &err), ANVIL_OK);

    char path[4200];
    snprintf(path, sizeof path, "%s/mx.gguf", test_tmpdir());
    anvil_gguf_writer *gw = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&gw, ctx, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string(gw, "general.name", "mxfp8 demo", &err), ANVIL_OK);
    const uint64_t ne[2] = { K, R };
    CU_ASSERT_EQUAL_FATAL(
        anvil_gguf_writer_add_tensor(gw, "blk.0.ffn_up.weight", 1100, 2, ne, blocks, sizeof blocks, &err), ANVIL_OK);
    int rc = anvil_gguf_writer_write_file(gw, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "\n%s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);
    anvil_gguf_writer_free(gw);

    /* inspect through the installed CLI with the plugin loaded */
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' inspect '%s' 2>&1", anvil_cli, config, path), 0);
    const char *t = strstr(out, "blk.0.ffn_up.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "mxfp8"));

    /* read back and decode */
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, path, ctx, 0, &err), ANVIL_OK);
    const anvil_gguf_tensor *tt = anvil_gguf_find_tensor(g, "blk.0.ffn_up.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tt);
    CU_ASSERT_EQUAL(tt->type, 1100);
    CU_ASSERT_EQUAL(tt->n_bytes, sizeof blocks);
    CU_ASSERT_EQUAL(tt->shape[0], R);
    CU_ASSERT_EQUAL(tt->shape[1], K);
    CU_ASSERT_EQUAL_FATAL(anvil_decode(ctx, 1100, tt->data, tt->n_bytes, back, R * K, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(back, dec, sizeof back), 0);
    anvil_gguf_close(g);

    /* without the plugin: unknown type id, "plugin is missing" */
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, path, NULL, 0, &err), ANVIL_E_GGUF_TENSOR_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "1100"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "plugin is missing"));
    CU_ASSERT_PTR_NULL(strstr(err.message, "corrupt"));
    CU_ASSERT_NOT_EQUAL(sh("env -u ANVIL_CONFIG '%s' inspect '%s' 2>&1", anvil_cli, path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1100"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "plugin is missing"));
    anvil_ctx_close(ctx);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("third-party codec against the installed SDK", setup, NULL);
    CU_add_test(s, "installed layout", test_installed_layout);
    CU_add_test(s, "an installed profile finds the installed plugins", test_installed_profile);
    CU_add_test(s, "plugin loads through a config", test_plugin_loads);
    CU_add_test(s, "codec encode/decode through the CLI", test_codec_roundtrip_cli);
    CU_add_test(s, "matmul through the codec's reference dot", test_matmul_fallback);
    CU_add_test(s, "GGUF with a tensor of the new type", test_gguf_with_new_type);
    return test_run_cunit();
}
