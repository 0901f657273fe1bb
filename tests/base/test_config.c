/* SPDX-License-Identifier: MIT */
/* The INI schema: what parses, and that every mistake names file:line. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "base_test.h"
#include "config.h"

static int parse(const char *text, anvil_config *cfg, anvil_error *err) {
    return anvil__config_parse_text(text, "/etc/anvil/test.ini", cfg, err);
}

static void test_full_file(void) {
    anvil_config cfg;
    anvil_error err;
    const char *text = "; comment\n"
                       "# another comment\n"
                       "[plugins]\n"
                       "path = plugins:/opt/anvil/plugins   ; two folders\n"
                       "load = codec-q8_0, codec-kquants ,backend-scalar\n"
                       "optional = backend-avx512\n"
                       "\n"
                       "[backends]\n"
                       "order = avx512, neon, scalar\n"
                       "[runtime]\n"
                       "threads = 3\n"
                       "[type.q4_K]\n"
                       "backend = scalar\n";
    CU_ASSERT_EQUAL_FATAL(parse(text, &cfg, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(cfg.n_search, 2);
    CU_ASSERT_STRING_EQUAL(cfg.search[0], "/etc/anvil/plugins");
    CU_ASSERT_STRING_EQUAL(cfg.search[1], "/opt/anvil/plugins");
    CU_ASSERT_EQUAL_FATAL(cfg.n_load, 3);
    CU_ASSERT_STRING_EQUAL(cfg.load[1], "codec-kquants");
    CU_ASSERT_STRING_EQUAL(cfg.load[2], "backend-scalar");
    CU_ASSERT_EQUAL(cfg.load_lines[0], 5);
    CU_ASSERT_FALSE(cfg.load_all);
    CU_ASSERT_EQUAL(cfg.n_optional, 1);
    CU_ASSERT_EQUAL(cfg.n_order, 3);
    CU_ASSERT_STRING_EQUAL(cfg.order[2], "scalar");
    CU_ASSERT_EQUAL(cfg.threads, 3);
    CU_ASSERT_EQUAL_FATAL(cfg.n_pins, 1);
    CU_ASSERT_STRING_EQUAL(cfg.pins[0].type_name, "q4_K");
    CU_ASSERT_STRING_EQUAL(cfg.pins[0].backend, "scalar");
    CU_ASSERT_EQUAL(cfg.pins[0].line, 13);
    anvil__config_free(&cfg);
}

static void test_defaults(void) {
    anvil_config cfg;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(parse("[plugins]\npath = x\n", &cfg, &err), ANVIL_OK);
    CU_ASSERT_TRUE(cfg.load_all); /* no load list: everything in the path */
    CU_ASSERT_EQUAL(cfg.threads, 0);
    anvil__config_free(&cfg);
    CU_ASSERT_EQUAL_FATAL(parse("[plugins]\nload = *\n", &cfg, &err), ANVIL_OK);
    CU_ASSERT_TRUE(cfg.load_all);
    anvil__config_free(&cfg);
}

static void test_continuation_line(void) {
    anvil_config cfg;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(parse("[plugins]\nload = a, b\n  c, d\n", &cfg, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(cfg.n_load, 4);
    CU_ASSERT_STRING_EQUAL(cfg.load[3], "d");
    CU_ASSERT_EQUAL(cfg.load_lines[2], 3);
    anvil__config_free(&cfg);
}

/* Each bad input: expected status and the file:line prefix. */
static void expect_error(const char *text, int code, const char *where, const char *needle) {
    anvil_config cfg;
    anvil_error err = { 0 };
    int rc = parse(text, &cfg, &err);
    CU_ASSERT_EQUAL(rc, code);
    CU_ASSERT_EQUAL(err.code, code);
    if (strstr(err.message, where) == NULL || strstr(err.message, needle) == NULL) {
        fprintf(stderr, "\nmessage was: %s (wanted %s ... %s)\n", err.message, where, needle);
        CU_FAIL("message lacks file:line or the reason");
    }
}

static void test_errors(void) {
    expect_error("[plugins]\nload = a\n[bogus]\n", ANVIL_E_CONFIG_UNKNOWN, "test.ini:3:", "unknown section [bogus]");
    expect_error("[plugins]\nlaod = a\n", ANVIL_E_CONFIG_UNKNOWN, "test.ini:2:", "unknown key 'laod'");
    expect_error("[plugins]\nload = a\nload = b\n", ANVIL_E_CONFIG_VALUE, "test.ini:3:", "given twice");
    expect_error("[runtime]\nthreads = many\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "threads");
    expect_error("[runtime]\nthreads = -1\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "0 to 1024");
    expect_error("[plugins]\nload = a,,b\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "empty item");
    expect_error("[plugins]\njust some words\n", ANVIL_E_CONFIG_SYNTAX, "test.ini:2:", "key = value");
    expect_error("[type.q4_K]\nbackend = a, b\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "exactly one backend");
    expect_error("[type.q4_K]\nbackend = a\n[type.q4_K]\nbackend = b\n", ANVIL_E_CONFIG_VALUE,
                 "test.ini:4:", "given twice");
    expect_error("[backends]\nsort = x\n", ANVIL_E_CONFIG_UNKNOWN, "test.ini:2:", "unknown key 'sort'");
    /* an unknown section with no keys is still an error */
    expect_error("[plugins]\nload = a\n[empty]\n", ANVIL_E_CONFIG_UNKNOWN, "test.ini:3:", "[empty]");
    /* a line longer than inih's buffer is reported, never cut silently */
    char longline[400];
    memset(longline, 'a', sizeof longline);
    memcpy(longline, "[plugins]\nload = ", 17);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = '\0';
    expect_error(longline, ANVIL_E_CONFIG_SYNTAX, "test.ini:2:", "longer than");
    /* ... and says what to do instead */
    expect_error(longline, ANVIL_E_CONFIG_SYNTAX, "test.ini:2:", "continue a long value on indented lines");
    /* an unterminated header is reported at its line, and so is a key under it */
    expect_error("[plugins\nload = a\n", ANVIL_E_CONFIG_SYNTAX, "test.ini:1:", "unterminated section header");
    expect_error("[plugins]\nload = a\n[backends\norder = scalar\n", ANVIL_E_CONFIG_SYNTAX,
                 "test.ini:3:", "'[backends'");
    /* plugins are named, never located */
    expect_error("[plugins]\nload = codec-q8_0, ../../x.so\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "not by path");
    expect_error("[plugins]\nload = /opt/evil/x.so\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "not by path");
    expect_error("[plugins]\noptional = sub/x\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "not by path");
    expect_error("[plugins]\nallow_insecure = maybe\n", ANVIL_E_CONFIG_VALUE, "test.ini:2:", "yes or no");
}

static void test_long_values(void) {
    /* What the long-line message suggests works: path repeated, and continued. */
    anvil_config cfg;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(parse("[plugins]\npath = /a\npath = /b:/c\n  /d\nallow_insecure = yes\n", &cfg, &err),
                          ANVIL_OK);
    CU_ASSERT_EQUAL(cfg.n_search, 4);
    CU_ASSERT(cfg.n_search == 4 && strcmp(cfg.search[3], "/d") == 0);
    CU_ASSERT_EQUAL(cfg.allow_insecure, 1);
    CU_ASSERT_EQUAL(cfg.allow_insecure_line, 5);
    anvil__config_free(&cfg);
}

static void test_missing_file(void) {
    anvil_config cfg;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil__config_load("/nonexistent/anvil.ini", &cfg, &err), ANVIL_E_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "/nonexistent/anvil.ini"));
}

void base_add_config_tests(void) {
    CU_pSuite s = CU_add_suite("config", NULL, NULL);
    CU_add_test(s, "a full file parses", test_full_file);
    CU_add_test(s, "defaults", test_defaults);
    CU_add_test(s, "continuation lines extend lists", test_continuation_line);
    CU_add_test(s, "every mistake names file:line", test_errors);
    CU_add_test(s, "long values: repeated path, continuation lines", test_long_values);
    CU_add_test(s, "missing file", test_missing_file);
}
