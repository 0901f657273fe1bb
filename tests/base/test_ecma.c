/* SPDX-License-Identifier: MIT */
/*
 * The ECMAScript matcher under quantize's --tensor-type patterns
 * (host/src/base/ecma_regex.h): every case of ecma_cases.tsv, written by
 * gen_ecma_cases.cpp from libstdc++'s std::regex, gets libstdc++'s answer;
 * hostile patterns give up or are refused instead of running away.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_test.h"
#include "ecma_regex.h"
#include "read_file.h"
#include "test_env.h"

static void test_ecma_table(void) {
    size_t n = 0;
    char *text = test_read_file(test_source_path("base/ecma_cases.tsv"), &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    size_t cases = 0, bad = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *t1 = strchr(line, '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (t1 == NULL || t2 == NULL) continue;
        *t1 = *t2 = '\0';
        const char *pat = line, *subj = t1 + 1, *want = t2 + 1;
        if (strcmp(subj, "(empty)") == 0) subj = "";
        ecma_re *re = NULL;
        char why[256];
        const int crc = ecma_re_compile(pat, strlen(pat), &re, why, sizeof why);
        int got;
        if (crc != 0) {
            got = 'E';
        } else {
            got = ecma_re_search(re, subj, strlen(subj)) == 1 ? '1' : '0';
            ecma_re_free(re);
        }
        cases++;
        if (got != want[0]) {
            bad++;
            fprintf(stderr, "\n  /%s/ on '%s': libstdc++ says %c, anvil %c", pat, subj, want[0], got);
        }
    }
    free(text);
    CU_ASSERT(cases > 1000);
    CU_ASSERT_EQUAL(bad, 0);
}

/* A pattern with back-references that would take forever gives up cleanly. */
static void test_ecma_budget(void) {
    ecma_re *re = NULL;
    char why[256];
    CU_ASSERT_FATAL(ecma_re_compile("(a*)*\\1b", 8, &re, why, sizeof why) == 0);
    char s[40];
    memset(s, 'a', sizeof s);
    const int r = ecma_re_search(re, s, sizeof s);
    CU_ASSERT(r == -1 || r == 0);
    ecma_re_free(re);
    /* Without back-references the same shape is linear and says no. */
    CU_ASSERT_FATAL(ecma_re_compile("(a*)*b", 6, &re, why, sizeof why) == 0);
    CU_ASSERT_EQUAL(ecma_re_search(re, s, sizeof s), 0);
    ecma_re_free(re);
    /* A huge repetition count is refused, not expanded. */
    CU_ASSERT(ecma_re_compile("(ab){30000}", 11, &re, why, sizeof why) != 0);
    CU_ASSERT(strstr(why, "too complex") != NULL);
    /* Groups nested thousands deep are refused, not recursed into. */
    char deep[4 * 3000 + 2];
    for (int i = 0; i < 3000; ++i) memcpy(deep + 3 * i, "(?:", 3);
    deep[9000] = 'a';
    memset(deep + 9001, ')', 3000);
    CU_ASSERT(ecma_re_compile(deep, 12001, &re, why, sizeof why) != 0);
    CU_ASSERT(strstr(why, "nested") != NULL);
}

void base_add_ecma_tests(void) {
    CU_pSuite s = CU_add_suite("ecma regex", NULL, NULL);
    CU_add_test(s, "ECMAScript patterns: libstdc++'s answers", test_ecma_table);
    CU_add_test(s, "ECMAScript: step budget, repetition limit", test_ecma_budget);
}
