/* SPDX-License-Identifier: MIT */
#include "test_env.h"

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *test_source_path(const char *rel) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", ANVIL_TEST_SOURCE_DIR, rel);
    return buf;
}

const char *test_shared_path(const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", ANVIL_SHARED_TESTDATA, name);
    struct stat st;
    return stat(buf, &st) == 0 ? buf : NULL;
}

const char *test_data_path(const char *name) {
    static char buf[4096];
    const char *shared = test_shared_path(name);
    if (shared != NULL) {
        snprintf(buf, sizeof buf, "%s", shared);
        return buf;
    }
    snprintf(buf, sizeof buf, "%s/data/%s", ANVIL_TEST_SOURCE_DIR, name);
    struct stat st;
    return stat(buf, &st) == 0 ? buf : NULL;
}

const char *test_config_path(void) {
    const char *e = getenv("ANVIL_CONFIG");
    return (e != NULL && *e != '\0') ? e : ANVIL_TEST_CONFIG;
}

static char tmpdir[4096];

const char *test_tmpdir(void) {
    if (tmpdir[0] == '\0') {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/anvil-test-XXXXXX", base ? base : "/tmp");
        if (mkdtemp(tmpdir) == NULL) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tmpdir;
}

void test_tmpdir_cleanup(void) {
    if (tmpdir[0] != '\0') {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) {
            fprintf(stderr, "warning: could not remove %s\n", tmpdir);
        }
        tmpdir[0] = '\0';
    }
}

int test_shell(char *out, size_t cap, const char *fmt, ...) {
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (p == NULL) return -1;
    const size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int test_run_cunit(void) {
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    const unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    const unsigned asserts = CU_get_number_of_asserts();
    const int setup_failed = CU_get_number_of_suites_failed() > 0;
    CU_cleanup_registry();
    test_tmpdir_cleanup();
    if (asserts == 0) {
        fprintf(stderr, "no assertion ran: a test that cannot fail is not a test\n");
        return 1;
    }
    return (failed == 0 && !setup_failed) ? 0 : 1;
}

anvil_host_services test_host_services(void) {
    anvil_host_services host;
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.abi_major = ANVIL_ABI_MAJOR;
    host.abi_minor = ANVIL_ABI_MINOR;
    return host;
}
