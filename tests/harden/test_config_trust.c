/* SPDX-License-Identifier: MIT */
/*
 * Where code and configuration may come from (issue 20, item 4), the INI
 * edge cases (item 6; issue 18, item 6) and content detection (item 6).
 *
 * Every file and folder these tests create gets its mode set explicitly:
 * the result must not depend on the umask the tests run under.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "anvil/safetensors.h"
#include "config.h"
#include "test_env.h"

static char out[1 << 16];

#define sh(...) test_shell(out, sizeof out, __VA_ARGS__)

static const char *tmp_path(const char *name) {
    static char buf[8][4200];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", test_tmpdir(), name);
    return b;
}

static void write_file(const char *path, const void *data, size_t n, mode_t mode) {
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(data, 1, n, f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(chmod(path, mode), 0);
}

static void write_text(const char *path, const char *text) { write_file(path, text, strlen(text), 0644); }

static void make_dir(const char *path, mode_t mode) {
    CU_ASSERT_FATAL(mkdir(path, mode) == 0 || errno == EEXIST);
    CU_ASSERT_EQUAL_FATAL(chmod(path, mode), 0);
}

static void copy_plugin(const char *name, const char *dir, mode_t mode) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp '%s/%s.so' '%s/%s.so' && chmod %o '%s/%s.so'", ANVIL_PLUGIN_DIR, name, dir, name,
             (unsigned)mode, dir, name);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
}

static int has(const char *hay, const char *needle) {
    if (hay != NULL && strstr(hay, needle) != NULL) return 1;
    fprintf(stderr, "\n  wanted \"%s\" in: %s\n", needle, hay ? hay : "(null)");
    return 0;
}

/* ---- the INI file ------------------------------------------------------------- */

/* (The INI text cases are in tests/base/test_config.c; these need files.) */
static void test_ini_files(void) {
    anvil_config cfg;
    anvil_error err;
    /* A NUL byte: refused with file:line (it would silently cut the line). */
    const char nul[] = "[plugins]\nload = codec-q8_0\x00, evil\n";
    const char *p = tmp_path("nul.ini");
    write_file(p, nul, sizeof nul - 1, 0644);
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(anvil__config_load(p, &cfg, &err), ANVIL_E_CONFIG_SYNTAX);
    CU_ASSERT(has(err.message, "nul.ini:2:") && has(err.message, "NUL byte"));
    /* A folder is not a config. */
    CU_ASSERT_EQUAL(anvil__config_load(test_tmpdir(), &cfg, &err), ANVIL_E_IO);
    CU_ASSERT(has(err.message, "a folder"));
}

/* ---- trust: configs ------------------------------------------------------------- */

static void test_config_trust(void) {
    anvil_config cfg;
    anvil_error err;
    const char *good = tmp_path("good.ini");
    write_text(good, "[plugins]\nload = codec-q8_0\n");
    CU_ASSERT_EQUAL(anvil__config_load(good, &cfg, &err), ANVIL_OK);
    anvil__config_free(&cfg);

    CU_ASSERT_EQUAL(chmod(good, 0666), 0);
    CU_ASSERT_EQUAL(anvil__config_load(good, &cfg, &err), ANVIL_E_UNTRUSTED);
    CU_ASSERT(has(err.message, "good.ini is writable by others") && has(err.message, "0666"));
    /* The environment opt-out loads it, and says so. */
    setenv("ANVIL_ALLOW_INSECURE", "1", 1);
    CU_ASSERT_EQUAL_FATAL(anvil__config_load(good, &cfg, &err), ANVIL_OK);
    CU_ASSERT(cfg.insecure_env == 1 && has(cfg.trust_note, "writable by others"));
    anvil__config_free(&cfg);
    unsetenv("ANVIL_ALLOW_INSECURE");
    CU_ASSERT_EQUAL(chmod(good, 0644), 0);

    /* Its folder writable by others: refused, unless sticky (like /tmp). */
    const char *open_dir = tmp_path("open"), *in_open = tmp_path("open/c.ini");
    make_dir(open_dir, 0777);
    write_text(in_open, "[plugins]\nload = codec-q8_0\n");
    CU_ASSERT_EQUAL(anvil__config_load(in_open, &cfg, &err), ANVIL_E_UNTRUSTED);
    CU_ASSERT(has(err.message, "/open is writable by others"));
    CU_ASSERT_EQUAL(chmod(open_dir, 01777), 0);
    CU_ASSERT_EQUAL(anvil__config_load(in_open, &cfg, &err), ANVIL_OK);
    anvil__config_free(&cfg);
    CU_ASSERT_EQUAL(chmod(open_dir, 0755), 0);

    if (geteuid() == 0) {
        /* Owned by another, non-root user. */
        CU_ASSERT_EQUAL(chown(in_open, 65534, 65534), 0);
        CU_ASSERT_EQUAL(anvil__config_load(in_open, &cfg, &err), ANVIL_E_UNTRUSTED);
        CU_ASSERT(has(err.message, "owned by uid 65534"));
        CU_ASSERT_EQUAL(chown(in_open, 0, 0), 0);
        /* Group-writable through a group that is not the owner's own. */
        CU_ASSERT_EQUAL(chown(in_open, 0, 100), 0);
        CU_ASSERT_EQUAL(chmod(in_open, 0664), 0);
        CU_ASSERT_EQUAL(anvil__config_load(in_open, &cfg, &err), ANVIL_E_UNTRUSTED);
        CU_ASSERT(has(err.message, "writable by its group"));
        CU_ASSERT_EQUAL(chown(in_open, 0, 0), 0);
        CU_ASSERT_EQUAL(chmod(in_open, 0644), 0);
    }
}

/* ---- trust: plugins ---------------------------------------------------------------- */

static anvil_plugin_report report_of(anvil_ctx *ctx, const char *name) {
    anvil_plugin_report r;
    memset(&r, 0, sizeof r);
    for (size_t i = 0; i < anvil_ctx_plugin_count(ctx); ++i) {
        anvil_ctx_plugin_report(ctx, i, &r);
        if (strcmp(r.name, name) == 0) return r;
    }
    memset(&r, 0, sizeof r);
    return r;
}

static void test_plugin_trust(void) {
    const char *dir = tmp_path("pl"), *ini = tmp_path("pl.ini");
    make_dir(dir, 0755);
    copy_plugin("codec-q8_0", dir, 0644);
    char text[9000];
    snprintf(text, sizeof text, "[plugins]\npath = %s\nload = codec-q8_0\n", dir);
    write_text(ini, text);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(report_of(ctx, "codec-q8_0").status, ANVIL_OK);
    anvil_ctx_close(ctx);

    /* A world-writable plugin folder: refused, with the reason and the path. */
    CU_ASSERT_EQUAL(chmod(dir, 0777), 0);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_OK);
    anvil_plugin_report r = report_of(ctx, "codec-q8_0");
    CU_ASSERT_EQUAL(r.status, ANVIL_E_UNTRUSTED);
    CU_ASSERT(has(r.reason, "/pl is writable by others (mode 0777)"));
    CU_ASSERT_EQUAL(r.config_line, 3);
    CU_ASSERT_PTR_NULL(anvil_ctx_codec(ctx, ANVIL_TYPE_Q8_0));
    anvil_ctx_close(ctx);
    /* Sticky is no excuse for a plugin folder: anyone could add a plugin. */
    CU_ASSERT_EQUAL(chmod(dir, 01777), 0);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(report_of(ctx, "codec-q8_0").status, ANVIL_E_UNTRUSTED);
    anvil_ctx_close(ctx);
    CU_ASSERT_EQUAL(chmod(dir, 0755), 0);

    /* A world-writable plugin file. */
    snprintf(text, sizeof text, "%s/codec-q8_0.so", dir);
    CU_ASSERT_EQUAL(chmod(text, 0666), 0);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_OK);
    r = report_of(ctx, "codec-q8_0");
    CU_ASSERT_EQUAL(r.status, ANVIL_E_UNTRUSTED);
    CU_ASSERT(has(r.reason, "codec-q8_0.so is writable by others"));
    anvil_ctx_close(ctx);
    CU_ASSERT_EQUAL(chmod(text, 0644), 0);
    if (geteuid() == 0) {
        CU_ASSERT_EQUAL(chown(text, 65534, 65534), 0);
        CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_OK);
        r = report_of(ctx, "codec-q8_0");
        CU_ASSERT_EQUAL(r.status, ANVIL_E_UNTRUSTED);
        CU_ASSERT(has(r.reason, "owned by uid 65534"));
        anvil_ctx_close(ctx);
        CU_ASSERT_EQUAL(chown(text, 0, 0), 0);
    }

    /* The development opt-out loads it, and every report says so. */
    CU_ASSERT_EQUAL(chmod(dir, 0777), 0);
    char insecure[9000];
    snprintf(insecure, sizeof insecure, "[plugins]\npath = %s\nload = codec-q8_0\nallow_insecure = yes\n", dir);
    const char *ini2 = tmp_path("insecure.ini");
    write_text(ini2, insecure);
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, ini2, &err), ANVIL_OK);
    r = report_of(ctx, "codec-q8_0");
    CU_ASSERT_EQUAL(r.status, ANVIL_OK);
    CU_ASSERT(has(r.trust_note, "writable by others"));
    anvil_config_report cr;
    CU_ASSERT_EQUAL(anvil_ctx_config_report(ctx, &cr), ANVIL_OK);
    CU_ASSERT_EQUAL(cr.insecure, 1);
    CU_ASSERT(has(cr.insecure_why, "allow_insecure = yes at ") && has(cr.insecure_why, "insecure.ini:4"));
    CU_ASSERT(has(cr.source, "--config"));
    anvil_ctx_close(ctx);

    /* `anvil plugins`: which config and why, loudly insecure, file:line of a failure. */
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' plugins 2>/dev/null", ANVIL_CLI, ini2), 0);
    CU_ASSERT(has(out, "(from --config)") && has(out, "INSECURE: [plugins] allow_insecure = yes at"));
    CU_ASSERT_EQUAL(sh("ANVIL_CONFIG='%s' '%s' plugins 2>/dev/null", ini, ANVIL_CLI), 1);
    CU_ASSERT(has(out, "(from ANVIL_CONFIG)") && has(out, "FAILED") && has(out, "pl.ini:3"));
    CU_ASSERT_EQUAL(sh("ANVIL_CONFIG='%s' ANVIL_ALLOW_INSECURE=1 '%s' plugins 2>/dev/null", ini, ANVIL_CLI), 0);
    CU_ASSERT(has(out, "INSECURE: ANVIL_ALLOW_INSECURE is set"));
    CU_ASSERT_EQUAL(sh("env -u ANVIL_CONFIG '%s' plugins 2>/dev/null", ANVIL_CLI), 0);
    CU_ASSERT(has(out, "(default: "));
    CU_ASSERT_EQUAL(chmod(dir, 0755), 0);
}

/* ---- [backends] order, profiles, explicit configs -------------------------------------- */

static void test_config_use(void) {
    const char *ini = tmp_path("order.ini");
    char text[9000];
    snprintf(text, sizeof text,
             "[plugins]\npath = %s\nload = codec-q8_0, backend-scalar\noptional = backend-neon\n"
             "[backends]\norder = neon, scalr\n",
             ANVIL_PLUGIN_DIR);
    write_text(ini, text);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_E_CONFIG_VALUE);
    CU_ASSERT(has(err.message, "order.ini:6:") && has(err.message, "'scalr'") &&
              has(err.message, "known backends: scalar"));
    /* An absent optional plugin's backend is a fine thing to name. */
    snprintf(text, sizeof text,
             "[plugins]\npath = %s\nload = codec-q8_0, backend-scalar\noptional = backend-neon\n"
             "[backends]\norder = neon, scalar\n",
             ANVIL_PLUGIN_DIR);
    write_text(ini, text);
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, ini, &err), ANVIL_OK);
    anvil_ctx_close(ctx);

    /* The profiles work from the source tree and the build tree (an install:
     * tests/sdk). */
    char profile[4200];
    snprintf(profile, sizeof profile, "%s/../conf/profiles/minimal-q8_0.ini", ANVIL_TEST_SOURCE_DIR);
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, profile, &err), ANVIL_OK);
    if (ctx != NULL) {
        CU_ASSERT_PTR_NOT_NULL(anvil_ctx_codec(ctx, ANVIL_TYPE_Q8_0));
        anvil_ctx_close(ctx);
    } else {
        fprintf(stderr, "\n  %s\n", err.message);
    }
    snprintf(profile, sizeof profile, "%s/etc/anvil/profiles/minimal-q8_0.ini", ANVIL_TEST_BUILD_DIR);
    CU_ASSERT_EQUAL(anvil_ctx_open(&ctx, profile, &err), ANVIL_OK);
    if (ctx != NULL) {
        CU_ASSERT_PTR_NOT_NULL(anvil_ctx_codec(ctx, ANVIL_TYPE_Q8_0));
        anvil_ctx_close(ctx);
    }

    /* Commands that need no plugin still read a config named explicitly. */
    const char *model = tmp_path("m.gguf");
    anvil_gguf_writer *w = NULL;
    const float data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    const uint64_t ne[1] = { 8 };
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string(w, "general.architecture", "llama", &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "t", ANVIL_TYPE_F32, 1, ne, data, sizeof data, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_write_file(w, model, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    CU_ASSERT_EQUAL(sh("'%s' --config /nonexistent/anvil.ini inspect '%s' 2>&1", ANVIL_CLI, model), 1);
    CU_ASSERT(has(out, "/nonexistent/anvil.ini"));
    CU_ASSERT_EQUAL(
        sh("ANVIL_CONFIG=/nonexistent/anvil.ini '%s' merge '%s' '%s' 2>&1", ANVIL_CLI, model, tmp_path("x.gguf")), 1);
    CU_ASSERT(has(out, "/nonexistent/anvil.ini"));
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' split '%s' '%s' --max-tensors 100 2>&1", ANVIL_CLI, test_tmpdir(), model,
                       tmp_path("s")),
                    1);
    CU_ASSERT(has(out, "a folder"));
    CU_ASSERT_EQUAL(sh("'%s' --config '%s' inspect '%s' >/dev/null 2>&1", ANVIL_CLI, ini, model), 0);
    CU_ASSERT_EQUAL(sh("env -u ANVIL_CONFIG '%s' --config '%s' inspect '%s' >/dev/null 2>&1", ANVIL_CLI, ini, model),
                    0);
}

/* ---- content detection ------------------------------------------------------------------ */

static void st_file(const char *name, uint64_t len, const char *header) {
    unsigned char buf[512];
    for (int i = 0; i < 8; ++i) buf[i] = (unsigned char)(len >> (8 * i));
    const size_t h = strlen(header);
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, 0, 4);
    write_file(tmp_path(name), buf, 8 + h + 4, 0644);
}

static void test_safetensors_detection(void) {
    const char *obj = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    char ws[256];
    snprintf(ws, sizeof ws, "   \n%s", obj);
    st_file("ws.safetensors", strlen(ws), ws);
    st_file("array.safetensors", 7, "[1,2,3]");
    st_file("cap.safetensors", 200000000u, ws);
    const char *names[] = { "ws.safetensors", "array.safetensors", "cap.safetensors" };
    for (int i = 0; i < 3; ++i) {
        CU_ASSERT_EQUAL(sh("'%s' inspect '%s' 2>&1", ANVIL_CLI, tmp_path(names[i])), 1);
        CU_ASSERT(has(out, "ANVIL_E_ST_"));
        CU_ASSERT_PTR_NULL(strstr(out, "not a GGUF file"));
    }
    const unsigned char text[] = "hello world, this is text {}";
    CU_ASSERT_EQUAL(anvil_st_sniff(text, sizeof text - 1), 0);
    const unsigned char gguf[16] = "GGUF\3\0\0\0";
    CU_ASSERT_EQUAL(anvil_st_sniff(gguf, sizeof gguf), 0);
    const unsigned char st[] = "\x07\0\0\0\0\0\0\0 \t{}";
    CU_ASSERT_EQUAL(anvil_st_sniff(st, sizeof st - 1), 1);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    unsetenv("ANVIL_ALLOW_INSECURE");
    CU_pSuite s = CU_add_suite("config and trust", NULL, NULL);
    CU_add_test(s, "INI files: NUL bytes, folders", test_ini_files);
    CU_add_test(s, "configs only from trusted places", test_config_trust);
    CU_add_test(s, "plugins only from trusted places", test_plugin_trust);
    CU_add_test(s, "order names known backends; profiles; explicit configs", test_config_use);
    CU_add_test(s, "safetensors detected by content", test_safetensors_detection);
    return test_run_cunit();
}
