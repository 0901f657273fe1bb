/* SPDX-License-Identifier: MIT */
/*
 * Transcode rules (--tensor-type and the like): compiled once per plan,
 * matched in order, first match wins; the patterns are ECMAScript as
 * llama.cpp's. Shared by the transcode and quantize policies and the plan,
 * below all three (transcode_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "transcode_internal.h"

int tc_compile_rules(anvil_transcode *t, const anvil_transcode_rule *rules, size_t n, const char *option,
                     anvil_error *err) {
    if (n == 0) return ANVIL_OK;
    if (rules == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL rules");
    t->rules = calloc(n, sizeof *t->rules);
    if (t->rules == NULL) return anvil__nomem(err);
    t->n_rules = n;
    for (size_t i = 0; i < n; ++i) {
        tc_rule *r = &t->rules[i];
        const char *pat = rules[i].pattern;
        if (pat == NULL || pat[0] == '\0') {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "%s rule %zu has an empty pattern", option, i + 1);
        }
        r->pattern = strdup(pat);
        r->label = malloc(strlen(pat) + strlen(option) + 2);
        if (r->pattern == NULL || r->label == NULL) {
            return anvil__nomem(err);
        }
        sprintf(r->label, "%s %s", option, pat);
        r->type = rules[i].type;
        char why[256];
        if (ecma_re_compile(pat, strlen(pat), &r->re, why, sizeof why) != 0) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "%s '%s': not a valid ECMAScript regular expression (llama.cpp's "
                                    "dialect): %s",
                                    option, pat, why);
        }
    }
    return ANVIL_OK;
}

int tc_match_rule(anvil_transcode *t, const char *name, size_t *index, anvil_error *err) {
    for (size_t i = 0; i < t->n_rules; ++i) {
        const int m = ecma_re_search(t->rules[i].re, name, strlen(name));
        if (m < 0) {
            anvil__error_set(err, ANVIL_E_INVALID_ARG,
                             "%s: the pattern needs too many steps on tensor '%s' (back-references); "
                             "simplify it",
                             t->rules[i].label, name);
            return -2;
        }
        if (m == 1) {
            t->rules[i].hits++;
            *index = i;
            return 1;
        }
    }
    return 0;
}
