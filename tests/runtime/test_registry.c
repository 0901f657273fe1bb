/* SPDX-License-Identifier: MIT */
/*
 * The registry and ABI contract, with purpose-built plugins: wrong major,
 * older minor (smaller struct), newer minor (extra trailing fields), no entry
 * symbol, NULL descriptor, duplicate type id, a backend scoring 0 -- each ends
 * in its expected state with its reason visible to `anvil plugins`.
 * Also: dispatch order and pins, the fallback paths, trimmed deployments.
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "test_env.h"

static const char *write_config(const char *name, const char *body) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(body, f);
    fclose(f);
    return path;
}

static const char *abi_config(void) {
    static char body[4096];
    snprintf(body, sizeof body,
             "[plugins]\n"
             "path = %s:%s\n"
             "load = codec-q8_0, backend-scalar, abi-good, abi-wrong-major, abi-old-minor, abi-new-minor,\n"
             "  abi-no-entry, abi-null-desc, abi-dup-type, abi-score-zero\n"
             "[backends]\n"
             "order = never, scalar\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    return write_config("abi.ini", body);
}

static int find_plugin(const anvil_ctx *ctx, const char *name, anvil_plugin_report *r) {
    for (size_t i = 0; i < anvil_ctx_plugin_count(ctx); ++i) {
        anvil_ctx_plugin_report(ctx, i, r);
        if (strcmp(r->name, name) == 0) return 1;
    }
    return 0;
}

static void expect_plugin(const anvil_ctx *ctx, const char *name, int status, const char *needle1,
                          const char *needle2) {
    anvil_plugin_report r;
    CU_ASSERT_TRUE_FATAL(find_plugin(ctx, name, &r));
    CU_ASSERT_EQUAL(r.status, status);
    if (status == ANVIL_OK) {
        CU_ASSERT_PTR_NOT_NULL(r.desc);
        CU_ASSERT_PTR_NULL(r.reason);
    } else {
        CU_ASSERT_PTR_NULL(r.desc);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r.reason);
        if ((needle1 && !strstr(r.reason, needle1)) || (needle2 && !strstr(r.reason, needle2))) {
            fprintf(stderr, "\n%s: reason '%s' lacks '%s' / '%s'\n", name, r.reason, needle1 ? needle1 : "",
                    needle2 ? needle2 : "");
            CU_FAIL("reason does not say why");
        }
    }
}

static void test_abi_cases(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    int rc = anvil_ctx_open(&ctx, abi_config(), &err);
    if (rc != ANVIL_OK) fprintf(stderr, "\n%s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);

    expect_plugin(ctx, "codec-q8_0", ANVIL_OK, NULL, NULL);
    expect_plugin(ctx, "abi-good", ANVIL_OK, NULL, NULL);
    /* wrong major: refused, both versions named */
    expect_plugin(ctx, "abi-wrong-major", ANVIL_E_ABI_MISMATCH, "ABI 2.3", "ABI 1.1");
    /* older minor with a smaller struct_size: loads */
    expect_plugin(ctx, "abi-old-minor", ANVIL_OK, NULL, NULL);
    /* newer minor with extra trailing fields: loads, extras ignored */
    expect_plugin(ctx, "abi-new-minor", ANVIL_OK, NULL, NULL);
    expect_plugin(ctx, "abi-no-entry", ANVIL_E_PLUGIN_NO_ENTRY, "anvil_plugin_entry", NULL);
    expect_plugin(ctx, "abi-null-desc", ANVIL_E_ABI_MISMATCH, "returned NULL", NULL);
    /* duplicate type id: names both plugins' claims */
    expect_plugin(ctx, "abi-dup-type", ANVIL_E_DUPLICATE_TYPE, "q4_0", "codec-q8_0");
    expect_plugin(ctx, "abi-score-zero", ANVIL_OK, NULL, NULL);

    /* The third-party codecs of the good plugins are registered. */
    CU_ASSERT_PTR_NOT_NULL(anvil_ctx_codec(ctx, 1030));
    CU_ASSERT_PTR_NOT_NULL(anvil_ctx_codec(ctx, 1031));
    CU_ASSERT_PTR_NOT_NULL(anvil_ctx_codec(ctx, 1032));
    const anvil_codec *q4 = anvil_ctx_codec(ctx, ANVIL_TYPE_Q4_0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q4);
    anvil_type_info t;
    CU_ASSERT_EQUAL(anvil_type_lookup(ctx, 1030, &t, &err), ANVIL_OK);
    CU_ASSERT_STRING_EQUAL(t.name, "tp_i8");
    CU_ASSERT_STRING_EQUAL(t.family_plugin, "abi-good");
    uint32_t id = 0;
    CU_ASSERT_EQUAL(anvil_type_from_name(ctx, "TP_I8", &id, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(id, 1030);

    /* The zero-score backend is listed, unusable, with its reason. */
    int seen_never = 0;
    for (size_t i = 0; i < anvil_ctx_backend_count(ctx); ++i) {
        anvil_backend_report b;
        anvil_ctx_backend_report(ctx, i, &b);
        if (strcmp(b.name, "never") == 0) {
            seen_never = 1;
            CU_ASSERT_EQUAL(b.score, 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(b.why, "QUANTUM-9"));
        }
    }
    CU_ASSERT_TRUE(seen_never);

    /* Dispatch skips the unusable backend although the order names it first. */
    int seen_q4 = 0;
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_dispatch_report d;
        anvil_ctx_dispatch_report(ctx, i, &d);
        if (d.weight_type == ANVIL_TYPE_Q4_0) {
            seen_q4 = 1;
            CU_ASSERT_PTR_NOT_NULL_FATAL(d.backend);
            CU_ASSERT_STRING_EQUAL(d.backend, "scalar");
            CU_ASSERT_FALSE(d.fallback);
        }
        if (d.weight_type == 1030) {
            CU_ASSERT_TRUE(d.fallback);
            CU_ASSERT_PTR_NOT_NULL(strstr(d.note, "reference dot"));
        }
    }
    CU_ASSERT_TRUE(seen_q4);

    /* A format no backend knows works in matmul through its reference dot. */
    enum { K = 64, R = 3 };
    float w[R * K], x[K], y[R];
    unsigned char blocks[R * 2 * 36];
    for (int i = 0; i < R * K; ++i) w[i] = sinf((float)i * 0.37f);
    for (int i = 0; i < K; ++i) x[i] = cosf((float)i * 0.11f);
    CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, 1030, w, R * K, blocks, sizeof blocks, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, 1030, blocks, R, K, x, 1, y, &err), ANVIL_OK);
    float dec[R * K];
    CU_ASSERT_EQUAL_FATAL(anvil_decode(ctx, 1030, blocks, sizeof blocks, dec, R * K, &err), ANVIL_OK);
    for (int r = 0; r < R; ++r) {
        double ref = 0;
        for (int i = 0; i < K; ++i) ref += (double)dec[r * K + i] * x[i];
        CU_ASSERT_DOUBLE_EQUAL(y[r], ref, 1e-4 * (fabs(ref) + 1));
    }
    anvil_ctx_close(ctx);
}

static void test_cli_shows_reasons(void) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' plugins 2>&1", ANVIL_CLI, abi_config());
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static char out[65536];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    CU_ASSERT_NOT_EQUAL(status, 0); /* plugins failed to load: exit 1 */
    const char *needles[] = { "abi-wrong-major", "ABI 2.3",   "abi-no-entry", "abi-null-desc",         "abi-dup-type",
                              "SKIPPED",         "QUANTUM-9", "tp_i8",        "ANVIL_E_DUPLICATE_TYPE" };
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; ++i) {
        if (strstr(out, needles[i]) == NULL) {
            fprintf(stderr, "\n`anvil plugins` output lacks '%s':\n%s\n", needles[i], out);
            CU_FAIL("anvil plugins does not show a reason");
        }
    }
}

static void test_missing_plugin(void) {
    char body[2048];
    snprintf(body, sizeof body, "[plugins]\npath = %s\nload = codec-q8_0,\n  codec-nonexistent\n", ANVIL_PLUGIN_DIR);
    const char *path = write_config("missing.ini", body);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, path, &err), ANVIL_E_PLUGIN_NOT_FOUND);
    CU_ASSERT_PTR_NULL(ctx);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "missing.ini:4:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "codec-nonexistent"));
    /* keep-going mode records it instead */
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open_ex(&ctx, path, ANVIL_CTX_KEEP_GOING, &err), ANVIL_OK);
    anvil_plugin_report r;
    CU_ASSERT_TRUE(find_plugin(ctx, "codec-nonexistent", &r));
    CU_ASSERT_EQUAL(r.status, ANVIL_E_PLUGIN_NOT_FOUND);
    anvil_ctx_close(ctx);
    /* optional plugins that are absent are noted, not errors */
    snprintf(body, sizeof body, "[plugins]\npath = %s\nload = codec-q8_0\noptional = backend-imaginary\n",
             ANVIL_PLUGIN_DIR);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, write_config("optional.ini", body), &err), ANVIL_OK);
    CU_ASSERT_TRUE(find_plugin(ctx, "backend-imaginary", &r));
    CU_ASSERT_TRUE(r.optional);
    anvil_ctx_close(ctx);
}

static void test_pins(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "[plugins]\npath = %s:%s\nload = codec-q8_0, backend-scalar, abi-score-zero\n"
             "[type.q8_0]\nbackend = never\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, write_config("pin.ini", body), &err), ANVIL_OK);
    int seen = 0;
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_dispatch_report d;
        anvil_ctx_dispatch_report(ctx, i, &d);
        if (d.weight_type == ANVIL_TYPE_Q8_0) {
            seen = 1;
            CU_ASSERT_STRING_EQUAL(d.backend, "scalar");
            CU_ASSERT_PTR_NOT_NULL(strstr(d.note, "pin to 'never' ignored"));
        }
    }
    CU_ASSERT_TRUE(seen);
    anvil_ctx_close(ctx);

    snprintf(body, sizeof body,
             "[plugins]\npath = %s\nload = codec-q8_0, backend-scalar\n[type.q8_0]\nbackend = warp\n",
             ANVIL_PLUGIN_DIR);
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, write_config("pin2.ini", body), &err), ANVIL_E_CONFIG_VALUE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "pin2.ini:5:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "warp"));
    snprintf(body, sizeof body,
             "[plugins]\npath = %s\nload = codec-q8_0, backend-scalar\n[type.q9_9]\nbackend = scalar\n",
             ANVIL_PLUGIN_DIR);
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, write_config("pin3.ini", body), &err), ANVIL_E_CONFIG_VALUE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "q9_9"));
}

/* Backends [backends] order does not name rank by score; a named one wins
 * over any score. packtest (score 5) loads before ranktest (score 9). */
static const anvil_dispatch_report *dispatch_of(const anvil_ctx *ctx, uint32_t type) {
    static anvil_dispatch_report d;
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        if (anvil_ctx_dispatch_report(ctx, i, &d) == ANVIL_OK && d.weight_type == type) return &d;
    }
    return NULL;
}

static void test_score_ranks(void) {
    char body[2048];
    uint32_t tp = 0;
    snprintf(body, sizeof body,
             "[plugins]\npath = %s:%s\nload = abi-good, backend-scalar, abi-pack-backend, abi-rank-backend\n"
             "[backends]\norder = scalar\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, write_config("rank.ini", body), &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_type_from_name(ctx, "tp_i8", &tp, &err), ANVIL_OK);
    const anvil_dispatch_report *d = dispatch_of(ctx, tp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_STRING_EQUAL(d->backend, "ranktest");
    CU_ASSERT_PTR_NOT_NULL(strstr(d->note, "chosen: score 9 > 5 (packtest)"));
    anvil_ctx_close(ctx);

    snprintf(body, sizeof body,
             "[plugins]\npath = %s:%s\nload = abi-good, abi-pack-backend, abi-rank-backend\n"
             "[backends]\norder = packtest\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, write_config("rank2.ini", body), &err), ANVIL_OK);
    d = dispatch_of(ctx, tp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_STRING_EQUAL(d->backend, "packtest");
    CU_ASSERT_PTR_NOT_NULL(strstr(d->note, "first usable backend in order"));
    anvil_ctx_close(ctx);
}

static const anvil_encoder_report *encoder_of(const anvil_ctx *ctx, uint32_t type) {
    static anvil_encoder_report e;
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        if (anvil_ctx_encoder_report(ctx, i, &e) == ANVIL_OK && e.type_id == type) return &e;
    }
    return NULL;
}

/* Weight encoders (ABI 1.1): validated, dispatched like kernels (order,
 * pins, usable backends), used by anvil_encode / anvil_encode_rows without
 * an importance matrix, and with one only when ANVIL_ENCODER_WEIGHTED. */
static void test_encoders(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "[plugins]\npath = %s:%s\nload = codec-q8_0, backend-scalar, abi-enc-backend, abi-score-zero\n"
             "[backends]\norder = never, enctest, scalar\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    int rc = anvil_ctx_open(&ctx, write_config("enc.ini", body), &err);
    if (rc != ANVIL_OK) fprintf(stderr, "\n%s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);
    char so[4096];
    snprintf(so, sizeof so, "%s/abi-enc-backend.so", ABI_PLUGIN_DIR);
    void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    unsigned *calls = (unsigned *)dlsym(h, "abi_enc_calls");
    CU_ASSERT_PTR_NOT_NULL_FATAL(calls);

    const anvil_encoder_report *e = encoder_of(ctx, 1033);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->backend, "enctest");
    CU_ASSERT_STRING_EQUAL(e->variant, "enctest-w");
    CU_ASSERT_STRING_EQUAL(e->weighted_backend, "enctest");
    e = encoder_of(ctx, 1034);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->backend, "enctest");
    CU_ASSERT_PTR_NULL(e->weighted_backend); /* not WEIGHTED: the codec's */
    e = encoder_of(ctx, ANVIL_TYPE_Q8_0);    /* enctest has none: next in order */
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->backend, "scalar");
    /* the unknown flag bit is dropped from the validated copy */
    for (size_t i = 0; i < anvil_ctx_backend_count(ctx); ++i) {
        anvil_backend_report b;
        anvil_ctx_backend_report(ctx, i, &b);
        const anvil_weight_encoder *enc;
        size_t n;
        CU_ASSERT_EQUAL(anvil_ctx_backend_encoders(ctx, i, &enc, &n), ANVIL_OK);
        if (strcmp(b.name, "enctest") == 0) {
            CU_ASSERT_EQUAL_FATAL(n, 3);
            CU_ASSERT_EQUAL(enc[0].flags, ANVIL_ENCODER_WEIGHTED);
        }
        if (strcmp(b.name, "scalar") == 0) CU_ASSERT(n >= 6); /* the q8_0 family at least */
    }

    enum { K = 64, R = 2 };
    float x[R * K], imx[K];
    unsigned char a[R * 2 * 36], bytes[R * 2 * 36];
    for (int i = 0; i < R * K; ++i) x[i] = sinf((float)i * 0.61f);
    for (int i = 0; i < K; ++i) imx[i] = 1.0f + (float)i;
    const anvil_codec *c = anvil_ctx_codec(ctx, 1033);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(c->encode(x, bytes, R * K, msg, sizeof msg), ANVIL_OK);
    memset(calls, 0, 3 * sizeof *calls);
    CU_ASSERT_EQUAL(anvil_encode_rows(ctx, 1033, x, R, K, NULL, a, sizeof a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(a, bytes, R * 2 * sizeof(float) + R * 2 * 32), 0);
    CU_ASSERT_EQUAL(calls[0], 1);
    CU_ASSERT_EQUAL(anvil_encode_rows(ctx, 1033, x, R, K, imx, a, sizeof a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(calls[1], 1);
    CU_ASSERT_EQUAL(anvil_encode_rows(ctx, 1034, x, R, K, imx, a, sizeof a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(calls[2], 1); /* tp_enc2's encoder is not WEIGHTED */
    CU_ASSERT_EQUAL(anvil_encode(ctx, 1034, x, R * K, a, sizeof a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(calls[0], 2);
    /* ggml ignores the matrix for tp_enc3: the plain encoder, matrix dropped */
    CU_ASSERT_EQUAL(anvil_encode_rows(ctx, 1035, x, R, K, imx, a, sizeof a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(calls[0], 3);
    CU_ASSERT_EQUAL(calls[1] + calls[2], 2);
    e = encoder_of(ctx, 1035);
    CU_ASSERT(e != NULL && e->weighted_backend != NULL && strcmp(e->weighted_backend, "enctest") == 0);
    const anvil_weight_encoder *we = NULL;
    CU_ASSERT_EQUAL(anvil_ctx_find_encoder(ctx, NULL, 1034, &we, &err), ANVIL_OK);
    CU_ASSERT(we != NULL && strcmp(we->variant, "enctest") == 0);
    CU_ASSERT_EQUAL(anvil_ctx_find_encoder(ctx, "scalar", 1034, &we, &err), ANVIL_E_ENCODER_UNAVAILABLE);
    CU_ASSERT_EQUAL(anvil_ctx_find_encoder(ctx, "never", 1034, &we, &err), ANVIL_E_CPU_UNSUPPORTED);
    CU_ASSERT_EQUAL(anvil_ctx_find_encoder(ctx, "scalar", ANVIL_TYPE_Q4_0, &we, &err), ANVIL_OK);
    /* the scalar (reference) encoder gives the codec's bytes, and names the row on bad input */
    float q[3 * 32];
    for (int i = 0; i < 3 * 32; ++i) q[i] = cosf((float)i);
    unsigned char q1[3 * 18], q2[3 * 18];
    CU_ASSERT_EQUAL(anvil_ctx_codec(ctx, ANVIL_TYPE_Q4_0)->encode(q, q1, 96, msg, sizeof msg), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_encode_rows(ctx, ANVIL_TYPE_Q4_0, q, 3, 32, NULL, q2, sizeof q2, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(q1, q2, sizeof q1), 0);
    q[2 * 32 + 5] = NAN;
    CU_ASSERT_EQUAL(anvil_encode_rows(ctx, ANVIL_TYPE_Q4_0, q, 3, 32, NULL, q2, sizeof q2, &err), ANVIL_E_NONFINITE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "row 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "element 5"));
    dlclose(h);
    anvil_ctx_close(ctx);

    /* Pins: like kernels -- a pinned backend without the encoder is passed
     * over; one with it wins over the order. */
    snprintf(body, sizeof body,
             "[plugins]\npath = %s:%s\nload = codec-q8_0, backend-scalar, abi-enc-backend\n"
             "[backends]\norder = scalar, enctest\n[type.tp_enc]\nbackend = scalar\n"
             "[type.tp_enc2]\nbackend = enctest\n[type.q4_0]\nbackend = enctest\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, write_config("enc-pin.ini", body), &err), ANVIL_OK);
    e = encoder_of(ctx, 1033);
    CU_ASSERT(e != NULL && strcmp(e->backend, "enctest") == 0);
    e = encoder_of(ctx, 1034);
    CU_ASSERT(e != NULL && strcmp(e->backend, "enctest") == 0 && strstr(e->note, "pinned") != NULL);
    e = encoder_of(ctx, ANVIL_TYPE_Q4_0);
    CU_ASSERT(e != NULL && strcmp(e->backend, "scalar") == 0);
    anvil_ctx_close(ctx);

    /* Malformed encoder tables: the whole plugin is refused, with why. */
    snprintf(body, sizeof body, "[plugins]\npath = %s:%s\nload = codec-q8_0, abi-bad-encoder, abi-dup-encoder\n",
             ANVIL_PLUGIN_DIR, ABI_PLUGIN_DIR);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, write_config("enc-bad.ini", body), &err), ANVIL_OK);
    expect_plugin(ctx, "abi-bad-encoder", ANVIL_E_PLUGIN_INVALID, "type id 5000", "third-party");
    expect_plugin(ctx, "abi-dup-encoder", ANVIL_E_PLUGIN_INVALID, "two encoders", "1033");
    CU_ASSERT_PTR_NULL(anvil_ctx_codec(ctx, 1033));
    anvil_ctx_close(ctx);
}

static void test_trimmed_deployment(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/minimal-q8_0.ini", ANVIL_PROFILE_DIR);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    int rc = anvil_ctx_open(&ctx, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "\n%s\n", err.message);
    CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_ctx_plugin_count(ctx), 2);
    float x[64];
    for (int i = 0; i < 64; ++i) x[i] = (float)i - 31.5f;
    unsigned char buf[512];
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_Q4_0, x, 64, buf, sizeof buf, &err), ANVIL_OK);
    float y[2];
    CU_ASSERT_EQUAL(anvil_matmul(ctx, ANVIL_TYPE_Q4_0, buf, 2, 32, x, 1, y, &err), ANVIL_OK);
    /* A type no loaded plugin provides: the message names the type and the plugin family. */
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_Q4_K, x, 64, buf, sizeof buf, &err), ANVIL_E_UNKNOWN_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "q4_K"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "codec-kquants"));
    CU_ASSERT_EQUAL(anvil_matmul(ctx, ANVIL_TYPE_IQ4_XS, buf, 1, 256, x, 1, y, &err), ANVIL_E_UNKNOWN_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "codec-cold"));
    anvil_ctx_close(ctx);
}

static void test_cpu_mask(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    const anvil_cpu_info *cpu = anvil_ctx_cpu(ctx);
    CU_ASSERT_TRUE(cpu->n_cpus >= 1);
    CU_ASSERT_EQUAL(cpu->features & ~cpu->features_raw, 0); /* masking only removes */
    const int has_avx2 = (cpu->features_raw & ANVIL_CPU_AVX2) != 0;
    anvil_ctx_close(ctx);
    if (!has_avx2) return;
    /* The mask is read once per process: check it through the CLI. */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ANVIL_CPU_MASK=-avx2,-avx512 '%s' --config '%s' plugins --json", ANVIL_CLI,
             test_config_path());
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static char out[65536];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    const char *f = strstr(out, "\"features\":\"");
    const char *u = strstr(out, "\"features_unmasked\":\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    char masked[512];
    snprintf(masked, sizeof masked, "%.*s", (int)(strchr(f + 12, '"') - (f + 12)), f + 12);
    CU_ASSERT_PTR_NULL(strstr(masked, "avx2"));
    CU_ASSERT_PTR_NULL(strstr(masked, "avx512"));
    CU_ASSERT_PTR_NOT_NULL(strstr(u, "avx2"));
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("registry", NULL, NULL);
    CU_add_test(s, "ABI cases end in their expected states", test_abi_cases);
    CU_add_test(s, "anvil plugins shows every reason", test_cli_shows_reasons);
    CU_add_test(s, "a missing plugin names file:line", test_missing_plugin);
    CU_add_test(s, "pins", test_pins);
    CU_add_test(s, "backends the order does not name rank by score", test_score_ranks);
    CU_add_test(s, "weight encoders: validated, dispatched, used", test_encoders);
    CU_add_test(s, "trimmed deployment", test_trimmed_deployment);
    CU_add_test(s, "ANVIL_CPU_MASK hides features", test_cpu_mask);
    return test_run_cunit();
}
