/* SPDX-License-Identifier: MIT */
/*
 * hf_shards: a checkpoint's shard set is whole. Shards are named
 * "<stem>-<k>-of-<N>.safetensors" (k from 1, zero-padded); a folder without
 * an index whose shards say "of-00002" but hold only shard 1, or an index
 * whose weight_map leaves a shard of its set out, would otherwise convert
 * to a file missing half its tensors, with exit 0. Every set (the same stem
 * and N) must hold each k of 1..N; the first missing one is named. Names
 * are parsed once and sorted: O(n log n). Other names are not sets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_checks.h"

typedef struct shard_name {
    const char *name;
    size_t stem;        /* bytes before "-<k>-of-<N>.safetensors" */
    unsigned long k, n; /* 1-based k of n */
    int width;          /* digits of N */
} shard_name;

static size_t digits(const char *s, size_t max) {
    size_t d = 0;
    while (d < max && s[d] >= '0' && s[d] <= '9') ++d;
    return d;
}

/* 1 when name is "<stem>-<k>-of-<N>.safetensors" with 1 <= k <= N <= 99999. */
static int parse(const char *name, shard_name *out) {
    static const char ext[] = ".safetensors";
    const size_t l = strlen(name), el = sizeof ext - 1;
    if (l <= el || strcmp(name + l - el, ext) != 0) return 0;
    const char *of = NULL;
    for (const char *p = strstr(name, "-of-"); p != NULL; p = strstr(p + 1, "-of-")) of = p;
    if (of == NULL) return 0;
    const char *np = of + 4;
    const size_t nd = digits(np, 6);
    if (nd == 0 || nd > 5 || np + nd != name + l - el) return 0;
    const char *kp = of;
    size_t kd = 0;
    while (kp > name && kp[-1] >= '0' && kp[-1] <= '9' && kd < 6) --kp, ++kd;
    if (kd == 0 || kd > 5 || kp == name || kp[-1] != '-') return 0;
    out->name = name;
    out->stem = (size_t)(kp - 1 - name);
    out->k = strtoul(kp, NULL, 10);
    out->n = strtoul(np, NULL, 10);
    out->width = (int)nd;
    return out->k >= 1 && out->k <= out->n;
}

static int cmp_shard(const void *a, const void *b) {
    const shard_name *x = a, *y = b;
    const size_t m = x->stem < y->stem ? x->stem : y->stem;
    int c = memcmp(x->name, y->name, m);
    if (c == 0) c = (x->stem > y->stem) - (x->stem < y->stem);
    if (c == 0) c = (x->n > y->n) - (x->n < y->n);
    if (c == 0) c = (x->k > y->k) - (x->k < y->k);
    return c;
}

static int report(const hf_folder *f, const shard_name *s, unsigned long k, int has_index, anvil_error *err) {
    char want[512];
    snprintf(want, sizeof want, "%.*s-%0*lu-of-%0*lu.safetensors", (int)s->stem, s->name, s->width, k, s->width,
             s->n);
    if (has_index) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s/model.safetensors.index.json maps no tensor to %s, shard %lu of the %lu "
                                "its other shards name: the index leaves a shard out; re-download the index",
                                f->dir, want, k, s->n);
    }
    return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                            "shard %s/%s is missing: %s is shard %lu of %lu; download the missing shard (or the "
                            "whole checkpoint) again",
                            f->dir, want, s->name, s->k, s->n);
}

int hf_shard_sets_check(const hf_folder *f, int has_index, anvil_error *err) {
    shard_name *s = malloc((f->n_parts + 1) * sizeof *s);
    if (s == NULL) return anvil__nomem(err);
    size_t n = 0;
    for (size_t i = 0; i < f->n_parts; ++i) n += (size_t)parse(f->part_names[i], &s[n]);
    if (n > 0) qsort(s, n, sizeof *s, cmp_shard);
    int rc = ANVIL_OK;
    for (size_t i = 0; i < n && rc == ANVIL_OK;) {
        size_t j = i;
        unsigned long want = 1;
        /* one set: the same stem and N; k seen in order, a repeat (other padding) skipped */
        while (j < n && s[j].stem == s[i].stem && s[j].n == s[i].n && !memcmp(s[j].name, s[i].name, s[i].stem)) {
            if (s[j].k == want) ++want;
            else if (s[j].k > want) break;
            ++j;
        }
        if (want <= s[i].n) {
            rc = report(f, &s[i], want, has_index, err);
            break;
        }
        i = j;
    }
    free(s);
    return rc;
}
